/**
 * Runtime settings of a stage: one JSON document, merged over the defaults below (the production
 * values of DESIGN.md). Handlers read it from the SSM parameter named by SETTINGS_PARAMETER on every
 * invocation through a per-container cache (`settingsMaxAgeSeconds`, 5 minutes by default; its own
 * document sets the age), so a changed parameter reaches warm containers within that age. The local stack runs a
 * stand-in for SSM (lib/local/ssm-stand-in.ts) and sets the same variables. Without
 * SETTINGS_PARAMETER (the CLI, in-process tests) CRM_SETTINGS (JSON) or the defaults apply.
 */
// zod/mini, not classic zod: its functional API tree-shakes, so a bundle carries only the parts it
// uses (≈12 KB instead of ≈95 KB, and less to evaluate at cold start). Same validation and messages.
import * as z from './zod-mini.js';
import { settingsParameterEnvVar } from '../../lib/topology.js';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { logger } from './observability.js';
import { cidrProblem } from './delivery/ssrf.js';

const int = () => z.number().check(z.int());
const positiveInt = () => z.number().check(z.int(), z.positive());
const nonnegative = () => z.number().check(z.nonnegative());

export const settingsSchema = z.object({
  stage: z._default(z.string(), 'dev'),
  /** Local mode: http:// endpoints allowed, loopback allowed by the SSRF guard. */
  local: z._default(z.boolean(), false),
  /** Plans that may use the integration API; 'all' means every plan. */
  allowedPlans: z._default(z.union([z.literal('all'), z.array(z.string())]), 'all'),
  /** Requests per minute per API key, by plan; an organization's own override wins. */
  planRateLimits: z._default(z.record(z.string(), positiveInt()), { free: 100, starter: 100, pro: 300, enterprise: 1000 }),
  defaultRateLimitPerMinute: z._default(positiveInt(), 100),
  /** What happens when the rate-limit table cannot be reached: admit (with a metric) or refuse. */
  rateLimitFailMode: z._default(z.enum(['open', 'closed']), 'open'),
  pricePerCallMicros: z._default(int().check(z.nonnegative()), 3000),
  /** Warm-container cache of key lookups; bounds how long a revoked key keeps working. */
  keyCacheTtlSeconds: z._default(nonnegative(), 30),
  /** Cache of an organization's webhook endpoints in fan-out and delivery. */
  endpointCacheTtlSeconds: z._default(nonnegative(), 30),
  rotationGraceHours: z._default(nonnegative(), 24),
  /** Delays before attempts 2..5, in seconds (DESIGN §11). Tests compress it. */
  retryScheduleSeconds: z._default(z.array(nonnegative()), [60, 600, 6000, 43200]),
  retryJitter: z._default(z.number().check(z.minimum(0), z.maximum(1)), 0.1),
  deliveryTimeoutMs: z._default(positiveInt(), 10_000),
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterFailingHours: z._default(z.number().check(z.positive()), 120),
  /** CIDRs the SSRF guard admits even though they are private (e.g. a VPC receiver). */
  ssrfAllowList: z._default(z.array(z.string().check(z.superRefine((cidr, ctx) => { const problem = cidrProblem(cidr); if (problem) ctx.addIssue({ code: 'custom', message: `not a valid CIDR: ${problem}` }); }))), []),
  maxEndpointsPerOrganization: z._default(positiveInt(), 10),
  /** Days request records and deliveries are kept (DynamoDB TTL). */
  retentionDays: z._default(positiveInt(), 30),
  /** How long a container serves its cached copy of this document before reading SSM again. */
  settingsMaxAgeSeconds: z._default(positiveInt(), 300),
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
