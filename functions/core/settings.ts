/**
 * Runtime settings of a stage: one JSON document, merged over the defaults below (the production
 * values of DESIGN.md). Handlers read it from the SSM parameter named by SETTINGS_PARAMETER on every
 * invocation through a per-container cache (`settingsMaxAgeSeconds`, 5 minutes by default; its own
 * document sets the age), so a changed parameter reaches warm containers within that age. The local stack runs a
 * stand-in for SSM (lib/local/ssm-stand-in.ts) and sets the same variables. Without
 * SETTINGS_PARAMETER (the CLI, in-process tests) CRM_SETTINGS (JSON) or the defaults apply.
 */
// A namespace import, not `{ z }`: esbuild can then drop the parts of zod we do not use (≈85 KB instead of ≈450 KB).
import * as z from 'zod';
import { settingsParameterEnvVar } from '../../lib/topology.js';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { logger } from './observability.js';
import { cidrProblem } from './delivery/ssrf.js';

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
  ssrfAllowList: z.array(z.string().superRefine((cidr, ctx) => { const problem = cidrProblem(cidr); if (problem) ctx.addIssue({ code: 'custom', message: `not a valid CIDR: ${problem}` }); })).default([]),
  maxEndpointsPerOrganization: z.number().int().positive().default(10),
  /** Days request records and deliveries are kept (DynamoDB TTL). */
  retentionDays: z.number().int().positive().default(30),
  /** How long a container serves its cached copy of this document before reading SSM again. */
  settingsMaxAgeSeconds: z.number().int().positive().default(300),
});
export type Settings = z.infer<typeof settingsSchema>;

export const defaultSettings: Settings = settingsSchema.parse({});

/** Parses a settings document (partial JSON) over the defaults; throws with the bad field named. */
export function parseSettings(json: unknown): Settings {
  return settingsSchema.parse(json ?? {});
}

/** Set by the local stack: the one place where `local: true` may take effect next to Lambda's variables. */
export const localStackMarkerEnvVar = 'CRM_LOCAL_STACK';

/**
 * `local: true` admits loopback receivers and http:// URLs; settings read by a real deployment (on
 * Lambda without the local-stack marker, or by the CLI's AWS target) must never turn it on. Forced
 * off with a warning rather than refused: a stray flag must not take the service down.
 */
export function withoutLocalMode(settings: Settings, where: string, warn: (message: string) => void = (m) => logger.warn(m)): Settings {
  if (!settings.local) return settings;
  warn(`settings: "local": true ignored (${where}); the SSRF guard keeps refusing loopback`);
  return { ...settings, local: false };
}

const onDeployedLambda = () => Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME) && !process.env[localStackMarkerEnvVar];

let ssm: SSMClient | undefined;
/** The document last read and parsed; kept to serve while SSM fails (stale beats down). */
let current: { raw: string; settings: Settings; readAt: number } | undefined;
let retryAt = 0;
let fromEnv: { raw: string | undefined; settings: Settings } | undefined;
/** While SSM fails and a previous value exists, wait this long between attempts (bounded by the max age). */
const STALE_RETRY_MS = 10_000;

function finish(settings: Settings): Settings {
  return onDeployedLambda() ? withoutLocalMode(settings, 'read on Lambda') : settings;
}

/** The raw settings document; the SDK retries transient errors (3 attempts in all). */
export async function readSettingsParameter(client: SSMClient, name: string): Promise<string> {
  const { GetParameterCommand } = await import('@aws-sdk/client-ssm');
  const out = await client.send(new GetParameterCommand({ Name: name }));
  return out.Parameter?.Value ?? '{}';
}

/**
 * The settings for this invocation: call it per invocation, it is cheap while the copy is younger
 * than `settingsMaxAgeSeconds`. A failed read or a document that does not parse is never cached:
 * with a previous value it is served stale (logged) and SSM is tried again after a short pause;
 * without one the invocation fails and the next one tries again.
 */
export async function loadSettings(): Promise<Settings> {
  const parameter = process.env[settingsParameterEnvVar];
  if (!parameter) {
    const raw = process.env.CRM_SETTINGS;
    if (!fromEnv || fromEnv.raw !== raw) fromEnv = { raw, settings: finish(raw ? parseSettings(JSON.parse(raw)) : defaultSettings) };
    return fromEnv.settings;
  }
  const now = Date.now();
  if (current && (now - current.readAt < current.settings.settingsMaxAgeSeconds * 1000 || now < retryAt)) return current.settings;
  try {
    if (!ssm) {
      // Loaded on first use: the CLI and local tools that never read SSM do not pay for it.
      const { SSMClient } = await import('@aws-sdk/client-ssm');
      ssm ??= new SSMClient({ maxAttempts: 3 });
    }
    const raw = await readSettingsParameter(ssm, parameter);
    // Parse (and warn) once per new document, not per read.
    if (!current || raw !== current.raw) current = { raw, settings: finish(parseSettings(JSON.parse(raw))), readAt: now };
    else current.readAt = now;
    return current.settings;
  } catch (error) {
    if (!current) throw error;
    retryAt = now + Math.min(STALE_RETRY_MS, current.settings.settingsMaxAgeSeconds * 1000);
    logger.warn('settings: cannot read the parameter, serving the previous value', { parameter, error: (error as Error).message });
    return current.settings;
  }
}

/** Forgets every cached copy (tests that switch settings sources in one process). */
export function resetSettingsCache(): void {
  current = undefined;
  fromEnv = undefined;
  retryAt = 0;
}
