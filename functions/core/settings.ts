/**
 * Runtime settings of a stage: one JSON document. On AWS it lives in the SSM parameter named by
 * SETTINGS_PARAMETER (fetched once, cached 5 minutes by Powertools Parameters); the local stack and
 * tests pass it as CRM_SETTINGS. Either source is merged over the defaults below, which are the
 * production values of DESIGN.md.
 */
// A namespace import, not `{ z }`: esbuild can then drop the parts of zod we do not use (≈85 KB instead of ≈450 KB).
import * as z from 'zod';
import { settingsParameterEnvVar } from '../../lib/topology.js';

export const settingsSchema = z.object({
  stage: z.string().default('dev'),
  /** Local mode: http:// endpoints allowed, loopback allowed by the SSRF guard. */
  local: z.boolean().default(false),
  /** Plans that may use the integration API; 'all' means every plan. */
  allowedPlans: z.union([z.literal('all'), z.array(z.string())]).default('all'),
  /** Requests per minute per API key, by plan; an organization's own override wins. */
  planRateLimits: z.record(z.string(), z.number().int().positive()).default({ free: 100, starter: 100, pro: 300, enterprise: 1000 }),
  defaultRateLimitPerMinute: z.number().int().positive().default(100),
  /** What happens when the rate-limit table cannot be reached: admit (with a metric) or refuse. */
  rateLimitFailMode: z.enum(['open', 'closed']).default('open'),
  pricePerCallMicros: z.number().int().nonnegative().default(3000),
  /** Warm-container cache of key lookups; bounds how long a revoked key keeps working. */
  keyCacheTtlSeconds: z.number().nonnegative().default(30),
  /** Cache of an organization's webhook endpoints in fan-out and delivery. */
  endpointCacheTtlSeconds: z.number().nonnegative().default(30),
  rotationGraceHours: z.number().nonnegative().default(24),
  /** Delays before attempts 2..5, in seconds (DESIGN §11). Tests compress it. */
  retryScheduleSeconds: z.array(z.number().nonnegative()).default([60, 600, 6000, 43200]),
  retryJitter: z.number().min(0).max(1).default(0.1),
  deliveryTimeoutMs: z.number().int().positive().default(10_000),
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterFailingHours: z.number().positive().default(120),
  /** CIDRs the SSRF guard admits even though they are private (e.g. a VPC receiver). */
  ssrfAllowList: z.array(z.string()).default([]),
  maxEndpointsPerOrganization: z.number().int().positive().default(10),
  /** Days request records and deliveries are kept (DynamoDB TTL). */
  retentionDays: z.number().int().positive().default(30),
});
export type Settings = z.infer<typeof settingsSchema>;

export const defaultSettings: Settings = settingsSchema.parse({});

/** Parses a settings document (partial JSON) over the defaults; throws with the bad field named. */
export function parseSettings(json: unknown): Settings {
  return settingsSchema.parse(json ?? {});
}

let cached: { value: Settings; at: number } | undefined;
const SSM_MAX_AGE_MS = 5 * 60_000;

/**
 * The settings of this container. CRM_SETTINGS (JSON) wins; else the SSM parameter; else defaults.
 * The SSM client is loaded lazily so the local stack and the CLI never touch it.
 */
export async function loadSettings(): Promise<Settings> {
  const now = Date.now();
  if (cached && now - cached.at < SSM_MAX_AGE_MS) return cached.value;
  let value: Settings;
  if (process.env.CRM_SETTINGS) {
    value = parseSettings(JSON.parse(process.env.CRM_SETTINGS));
  } else if (process.env[settingsParameterEnvVar]) {
    const { getParameter } = await import('@aws-lambda-powertools/parameters/ssm');
    const raw = await getParameter(process.env[settingsParameterEnvVar]!, { transform: 'json', maxAge: SSM_MAX_AGE_MS / 1000 });
    value = parseSettings(raw);
  } else {
    value = defaultSettings;
  }
  cached = { value, at: now };
  return value;
}

/** Drops the cached settings (tests that change CRM_SETTINGS). */
export function resetSettingsCache(): void {
  cached = undefined;
}
