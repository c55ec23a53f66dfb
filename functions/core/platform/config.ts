/**
 * The runtime configuration of a stage (docs/architecture.md#glossary; not the organization
 * settings of functions/core/settings/): one JSON document, merged over the defaults below (the production
 * values). Handlers read it from the SSM parameter named by SETTINGS_PARAMETER on every
 * invocation through a per-container cache (`settingsMaxAgeSeconds`, 5 minutes by default; its own
 * document sets the age, shortened by a random 0-30 % per container so containers born together do
 * not refresh together), so a changed parameter reaches warm containers within that age. When SSM
 * fails on a container's first read, the deploy-time snapshot of the document (CRM_SETTINGS_SNAPSHOT,
 * set by lib/stacks/crm-function.ts) is served instead of failing. The local stack runs a
 * stand-in for SSM (lib/local/ssm-stand-in.ts) and sets the same variables. Without
 * SETTINGS_PARAMETER (the CLI, in-process tests) CRM_SETTINGS (JSON) or the defaults apply. The
 * parameter's path, the env var names and `settingsMaxAgeSeconds` are deployed interfaces and keep
 * their names.
 */
// zod/mini, not classic zod: its functional API tree-shakes, so a bundle carries only the parts it
// uses (≈12 KB instead of ≈95 KB, and less to evaluate at cold start). Same validation and messages.
import * as z from './zod-mini.js';
import { settingsParameterEnvVar } from './bindings.js';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { logger } from './observability.js';
import { traced } from './tracing.js';
import { onDeployedLambda } from './runtime.js';
import { cidrProblem, withoutSensitiveAllowEntries } from './ip-ranges.js';

const int = () => z.number().check(z.int());
const positiveInt = () => z.number().check(z.int(), z.positive());
/**
 * The ceiling of every per-key limit (plans, an organization's override): twice one organization's
 * burst (50 leads/s) and 6 x the highest plan limit. The WAF's per-key rules count at it
 * (functions/front-door/waf.ts), so a key within its limit is never refused there first (docs/capacity.md).
 */
export const rateLimitCeilingPerMinute = 6000;
const keyLimit = () => z.number().check(z.int(), z.positive(), z.maximum(rateLimitCeilingPerMinute));
const nonnegative = () => z.number().check(z.nonnegative());
/** A bound on a setting that times a security control (how long a revoked key or a removed endpoint lives on). */
/** The longest lead-notice window used (leadNoticeWindowSeconds below). */
export const LEAD_NOTICE_WINDOW_MAX_SECONDS = 870;
const atMost = (max: number, field: string, why: string) => z.maximum(max, `${field} must be at most ${max} (${why})`);

/**
 * The most attempts a retry schedule may give a delivery: the attempt log keeps this many
 * (delivery/attempt-log.ts MAX_KEPT_ATTEMPTS may not be lower), and the attempt number is counted
 * from it (delivery/queue.ts attemptNumberOf). SQS's maxReceiveCount does not bound it: every
 * retry is a new message (platform/bindings.ts deliveryMaxReceives).
 */
export const MAX_DELIVERY_ATTEMPTS = 20;

export const configSchema = z.object({
  stage: z._default(z.string(), 'dev'),
  /** Local mode: http:// endpoints allowed, loopback allowed by the SSRF guard. */
  local: z._default(z.boolean(), false),
  /** Plans that may use the integration API; 'all' means every plan. */
  allowedPlans: z._default(z.union([z.literal('all'), z.array(z.string())]), 'all'),
  /** Requests per minute per API key, by plan; an organization's own override wins. */
  planRateLimits: z._default(z.record(z.string(), keyLimit()), { free: 100, starter: 100, pro: 300, enterprise: 1000 }),
  defaultRateLimitPerMinute: z._default(keyLimit(), 100),
  /** What happens when the rate-limit table cannot be reached: admit (with a metric) or refuse. */
  rateLimitFailMode: z._default(z.enum(['open', 'closed']), 'open'),
  /** Billed leads a UTC day through a publishable key whose own daily cap is not set (a key in a page can be farmed). */
  publishableDailyCap: z._default(positiveInt().check(z.maximum(1_000_000)), 1000),
  pricePerCallMicros: z._default(int().check(z.nonnegative()), 3000),
  /** Warm-container cache of key lookups; bounds how long a revoked key keeps working. */
  keyCacheTtlSeconds: z._default(nonnegative().check(atMost(300, 'keyCacheTtlSeconds', 'an unknown key or an organization\'s change is cached this long')), 30),
  /** A key that was found is re-read at least this often (or keyCacheTtlSeconds, if shorter): how long a revoked key keeps working (docs/api-keys.md). */
  keyRevocationSeconds: z._default(nonnegative().check(atMost(300, 'keyRevocationSeconds', 'a revoked key keeps working this long')), 5),
  /** Cache of an organization's webhook endpoints in fan-out and delivery. */
  endpointCacheTtlSeconds: z._default(nonnegative().check(atMost(300, 'endpointCacheTtlSeconds', 'a disabled or removed endpoint keeps receiving this long')), 30),
  rotationGraceHours: z._default(nonnegative(), 24),
  /**
   * The delays before attempts 2, 3, … in seconds (docs/webhooks.md#answering-retries-and-failures):
   * a delivery makes one attempt more than the schedule has entries (deliveryAttempts), each
   * delay used once, in order; 4 delays (the default) are 5 attempts, 8 delays 9. At most
   * MAX_DELIVERY_ATTEMPTS - 1 entries. Tests compress it.
   */
  retryScheduleSeconds: z._default(z.array(nonnegative()).check(z.maxLength(MAX_DELIVERY_ATTEMPTS - 1,
    `retryScheduleSeconds has at most ${MAX_DELIVERY_ATTEMPTS - 1} delays (${MAX_DELIVERY_ATTEMPTS} attempts: a delivery record keeps that many attempts, from which the attempt number is counted)`)), [60, 600, 6000, 43200]),
  /** Relative jitter of each delay: 0.1 is ±10 %, so retries of deliveries that failed together spread out. */
  retryJitter: z._default(z.number().check(z.minimum(0), z.maximum(1)), 0.1),
  /**
   * A retry (or a deferral) waiting at most this long stays on the delivery queue as a delayed
   * message; a longer one leaves the queue for the due-time index until the sweeper re-queues it
   * (docs/architecture.md#fair-delivery). At most 900 s, SQS's DelaySeconds maximum. Tests shorten it.
   */
  queueDelayMaxSeconds: z._default(int().check(z.nonnegative(), atMost(900, 'queueDelayMaxSeconds', 'SQS delays a message by at most 900 s')), 900),
  /** The due-index sweeper re-queues what falls due within this many seconds (as delayed messages): one schedule period. */
  dueSweepLookaheadSeconds: z._default(int().check(z.nonnegative(), atMost(900, 'dueSweepLookaheadSeconds', 'SQS delays a message by at most 900 s')), 60),
  deliveryTimeoutMs: z._default(positiveInt(), 10_000),
  /** The receiver check (docs/webhooks.md#checking-a-receiver): each request's time-out, and all its requests together (under the settings function's 20 s). */
  receiverCheckTimeoutMs: z._default(positiveInt().check(atMost(5_000, 'receiverCheckTimeoutMs', 'a check sends 8 requests within the settings function\'s 20 s')), 1500),
  receiverCheckBudgetMs: z._default(positiveInt().check(atMost(14_000, 'receiverCheckBudgetMs', 'the settings function times out at 20 s')), 12_000),
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterFailingHours: z._default(z.number().check(z.positive()), 120),
  /** Failed attempts in a row (time-outs included) that open an endpoint's circuit (docs/architecture.md#fair-delivery). */
  circuitFailureThreshold: z._default(positiveInt(), 5),
  /** How long a circuit first stays open; each failed probe doubles it, up to circuitMaxOpenSeconds. */
  circuitOpenSeconds: z._default(positiveInt(), 30),
  circuitMaxOpenSeconds: z._default(positiveInt(), 3600),
  /** Attempts in flight per endpoint per container; more wait up to endpointBusyWaitMs, then are re-scheduled. */
  maxInFlightPerEndpoint: z._default(positiveInt(), 4),
  endpointBusyWaitMs: z._default(nonnegative(), 1000),
  /** A main-lane attempt unanswered after this long is moved to the slow lane (no attempt used) with its endpoint, for slowLaneHoldSeconds. */
  slowLaneAfterMs: z._default(positiveInt(), 2000),
  slowLaneHoldSeconds: z._default(positiveInt(), 300),
  /** While attempts to an endpoint have had no answer for this long (none ended), its other deliveries go to the slow lane at once. */
  slowSuspectMs: z._default(positiveInt(), 500),
  /** CIDRs the SSRF guard admits even though they are private (e.g. a VPC receiver). */
  ssrfAllowList: z._default(z.array(z.string().check(z.superRefine((cidr, ctx) => { const problem = cidrProblem(cidr); if (problem) ctx.addIssue({ code: 'custom', message: `not a valid CIDR: ${problem}` }); }))), []),
  maxEndpointsPerOrganization: z._default(positiveInt(), 10),
  /**
   * The fan-out also puts each pending delivery's record, as it did before a delivery's first
   * outcome wrote it (delivery/queue.ts; 1 write unit and a byCreated entry more per delivery). Only
   * for the deploy that brings that change to a running stage, while delivery functions of the
   * earlier code (which drop a message without a record) may still run: docs/deploy.md "Deploy order".
   */
  pendingRecordsAtFanOut: z._default(z.boolean(), false),
  /** Days request records and deliveries are kept (DynamoDB TTL). */
  retentionDays: z._default(positiveInt(), 30),
  /** How long a container serves its cached copy of this document before reading SSM again. */
  settingsMaxAgeSeconds: z._default(positiveInt().check(atMost(3600, 'settingsMaxAgeSeconds', 'a changed setting, e.g. a tightened limit, takes this long to apply')), 300),
  /**
   * CAPTCHA siteverify URLs by provider (docs/leads.md#lead-forms-in-public-pages-publishable-keys), over the providers' own (functions/core/intake/captcha.ts);
   * tests point them at a loopback stub. On a deployed stage a non-https URL is dropped (asDeployed).
   */
  captchaVerifyUrls: z._default(z.partialRecord(z.enum(['turnstile', 'hcaptcha', 'recaptcha']), z.url()), {}),
  /**
   * Lead notices an organization is mailed one by one in a window of leadNoticeWindowSeconds; the
   * leads past it fold into the window's summary, sent at the window's end with the exact count
   * (docs/notifications.md "Bulk-safe: the cap").
   */
  leadNoticeCap: z._default(positiveInt(), 20),
  // At most 870: the window's summary waits for its end plus 30 s as one queue delay, and SQS delays
  // at most 900 s (events/lead-notices.ts SUMMARY_SETTLE_SECONDS); a longer window's summary would go early.
  // A longer one (up to a day was allowed before) is used as 870 with a warning, not refused: a stored
  // document that no longer parsed would leave every function on a stale snapshot (docs/deploy.md).
  leadNoticeWindowSeconds: z._default(z.pipe(positiveInt().check(atMost(86_400, 'leadNoticeWindowSeconds', 'a day')), z.transform((seconds: number) => {
    if (seconds <= LEAD_NOTICE_WINDOW_MAX_SECONDS) return seconds;
    logger.warn(`settings: leadNoticeWindowSeconds ${seconds} used as ${LEAD_NOTICE_WINDOW_MAX_SECONDS} (the window's summary is sent at its end plus 30 s, one queue delay of at most 900 s); set it to ${LEAD_NOTICE_WINDOW_MAX_SECONDS} or less`);
    return LEAD_NOTICE_WINDOW_MAX_SECONDS;
  })), 600),
  /** The UTC hour the daily digest of the day before is produced (its schedule runs hourly). */
  digestHourUtc: z._default(int().check(z.minimum(0), z.maximum(23)), 7),
  /** How long a siteverify call may take before the lead is refused (fail closed, 503). */
  captchaTimeoutMs: z._default(positiveInt().check(atMost(10_000, 'captchaTimeoutMs', 'the lead function times out at 10 s')), 3000),
  /**
   * The From of every notice (docs/notifications.md): on AWS an address of an SES-verified domain
   * (the stage's `notices.sender` in lib/stages.ts writes it here at deploy).
   */
  noticeSender: z._default(z.string().check(z.minLength(3), z.maxLength(200)), 'CRM notices <notices@example.com>'),
  /**
   * Send notices to this SMTP server (`smtp://host:port`, `smtps://user:pass@host`) instead of SES.
   * The local stack sets it to its mail capture, or to CRM_SMTP_URL (docs/local-stack.md).
   */
  noticeSmtpUrl: z.optional(z.string().check(z.regex(/^smtps?:\/\/[^\s]+$/, 'noticeSmtpUrl must be an smtp:// or smtps:// URL'))),
  /**
   * How long a failed notice waits before its next try, by the number of tries so far (the last
   * entry repeats); after platform/bindings.ts noticesMaxReceives tries it rests in the notices
   * dead-letter queue. Tests compress it.
   */
  noticeRetrySeconds: z._default(z.array(int().check(z.nonnegative(), z.maximum(43_200))).check(z.minLength(1)), [10, 60, 300, 1200, 3600, 7200, 14_400]),
  /** A mail server that has not answered within this long fails the try (it is retried later): a slow server holds one mailer batch, never a lead. */
  noticeSendTimeoutMs: z._default(positiveInt().check(atMost(20_000, 'noticeSendTimeoutMs', 'the mailer times out at 30 s')), 10_000),
});
export type Config = z.infer<typeof configSchema>;

export const defaultConfig: Config = configSchema.parse({});

/** Attempts a delivery makes in all under `config`: the first, then one after each delay of the retry schedule. */
export const deliveryAttempts = (config: Pick<Config, 'retryScheduleSeconds'>): number => config.retryScheduleSeconds.length + 1;

/** Parses a settings document (partial JSON) over the defaults; throws with the bad field named. */
export function parseConfig(json: unknown): Config {
  return configSchema.parse(json ?? {});
}

export { localStackMarkerEnvVar } from './runtime.js';

/**
 * Settings as a real deployment (on Lambda without the local-stack marker, or the CLI's AWS target)
 * may apply them. `local: true` admits loopback receivers and http:// URLs, and allow-list entries
 * over loopback or link-local (cloud metadata) ranges would re-open them: both are dropped with a
 * warning rather than refused, so a stray entry does not take the service down.
 */
export function asDeployed(settings: Config, where: string, warn: (message: string) => void = (m) => logger.warn(m)): Config {
  let out = settings;
  if (out.local) {
    warn(`settings: "local": true ignored (${where}); the SSRF guard keeps refusing loopback`);
    out = { ...out, local: false };
  }
  const allow = withoutSensitiveAllowEntries(out.ssrfAllowList, (m) => warn(`settings: ${m} (${where})`));
  if (allow !== out.ssrfAllowList) out = { ...out, ssrfAllowList: allow };
  // A CAPTCHA secret travels to the verify URL: never in clear text from a deployed stage.
  const plain = Object.entries(out.captchaVerifyUrls).filter(([, url]) => url && !url.startsWith('https://'));
  if (plain.length) {
    for (const [provider] of plain) warn(`settings: captchaVerifyUrls.${provider} is not https: ignored (${where}); the provider's own URL applies`);
    out = { ...out, captchaVerifyUrls: Object.fromEntries(Object.entries(out.captchaVerifyUrls).filter(([, url]) => url?.startsWith('https://'))) };
  }
  // noticeSmtpUrl's TLS rule is not checked here: it needs nodemailer's URL parser, which would
  // go into every function's bundle. notify/smtp-url.ts decides it, for the mailer and `crm`.
  return out;
}


/** Env var holding the settings document as deployed (JSON), served when SSM fails on a cold start. */
export const settingsSnapshotEnvVar = 'CRM_SETTINGS_SNAPSHOT';

/**
 * SSM clients by attempts, adaptive retry (it slows down on throttling: GetParameter allows 40 TPS per
 * account and region, shared by every cold container). A cold read has nothing to serve if it fails,
 * so it tries harder; a refresh with a copy in hand gives up sooner and serves the copy.
 */
const ssmClients = new Map<number, SSMClient>();
const COLD_ATTEMPTS = 6;
const REFRESH_ATTEMPTS = 2;
/**
 * With a snapshot to fall back on, a cold read gives up after this long: throttled, six adaptive
 * attempts take ~10 s, the whole time-out of the lead-intake function.
 */
const COLD_READ_BUDGET_MS = 2_000;
/** The document last read and parsed; kept to serve while SSM fails (stale beats down). */
let current: { raw: string; settings: Config; readAt: number } | undefined;
let retryAt = 0;
let fromEnv: { raw: string | undefined; settings: Config } | undefined;
/** While SSM fails and a copy exists, wait this long between attempts (bounded by the max age). */
const STALE_RETRY_MS = 10_000;
/** This container's share of the max age, in [0.7, 1): containers born together refresh apart. */
let ageFactor: number | undefined;

function finish(settings: Config): Config {
  return onDeployedLambda() ? asDeployed(settings, 'read on Lambda') : settings;
}

async function ssmClient(attempts: number): Promise<SSMClient> {
  let client = ssmClients.get(attempts);
  if (!client) {
    // Loaded on first use: the CLI and local tools that never read SSM do not pay for it.
    const { SSMClient } = await import('@aws-sdk/client-ssm');
    client = ssmClients.get(attempts) ?? await traced(new SSMClient({ maxAttempts: attempts, retryMode: 'adaptive' }));
    ssmClients.set(attempts, client);
  }
  return client;
}

/** The deploy-time document, when SSM cannot give one and nothing is cached; undefined if absent or bad. */
function snapshot(): { raw: string; settings: Config } | undefined {
  const raw = process.env[settingsSnapshotEnvVar];
  if (!raw) return undefined;
  try {
    return { raw, settings: finish(parseConfig(JSON.parse(raw))) };
  } catch (error) {
    logger.error('settings: the deploy-time snapshot does not parse', { error: (error as Error).message });
    return undefined;
  }
}

/** `promise`, or a rejection once `ms` have passed (the promise itself runs on, its outcome ignored). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The raw settings document; the client's SDK retries transient errors. */
export async function readConfigParameter(client: SSMClient, name: string): Promise<string> {
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
export async function loadConfig(): Promise<Config> {
  const parameter = process.env[settingsParameterEnvVar];
  if (!parameter) {
    const raw = process.env.CRM_SETTINGS;
    if (!fromEnv || fromEnv.raw !== raw) fromEnv = { raw, settings: finish(raw ? parseConfig(JSON.parse(raw)) : defaultConfig) };
    return fromEnv.settings;
  }
  const now = Date.now();
  ageFactor ??= 0.7 + 0.3 * Math.random();
  const maxAgeMs = (s: Config) => s.settingsMaxAgeSeconds * 1000 * ageFactor!;
  if (current && (now - current.readAt < maxAgeMs(current.settings) || now < retryAt)) return current.settings;
  try {
    const read = readConfigParameter(await ssmClient(current ? REFRESH_ATTEMPTS : COLD_ATTEMPTS), parameter);
    const raw = await (!current && process.env[settingsSnapshotEnvVar] ? within(read, COLD_READ_BUDGET_MS) : read);
    // Parse (and warn) once per new document, not per read.
    if (!current || raw !== current.raw) current = { raw, settings: finish(parseConfig(JSON.parse(raw))), readAt: now };
    else current.readAt = now;
    return current.settings;
  } catch (error) {
    const message = (error as Error).message;
    if (!current) {
      const deployed = snapshot();
      if (!deployed) throw error;
      // Served like a stale copy (never fresh): SSM is tried again after the pause below.
      current = { ...deployed, readAt: -Infinity };
      logger.warn('settings: cannot read the parameter and no copy is cached: serving the deploy-time snapshot', { parameter, error: message });
    } else {
      logger.warn('settings: cannot read the parameter, serving the previous value', { parameter, error: message });
    }
    retryAt = now + Math.min(STALE_RETRY_MS, maxAgeMs(current.settings));
    return current.settings;
  }
}

/** Forgets every cached copy and SSM client (tests that switch settings sources in one process). */
export function resetConfigCache(): void {
  for (const client of ssmClients.values()) client.destroy();
  ssmClients.clear(); // and with them the adaptive rate limiter's state
  current = undefined;
  fromEnv = undefined;
  retryAt = 0;
  ageFactor = undefined;
}
