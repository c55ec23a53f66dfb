/**
 * CAPTCHA verification of publishable-key leads (docs/leads.md#lead-forms-in-public-pages-publishable-keys): when the organization has a provider
 * set (`crm org set-captcha`), the form sends the widget's token in the provider's field and it is
 * checked server-side with the provider's siteverify API before anything is written.
 *
 * Fail closed: a token the provider rejects is a 403; a provider that cannot be asked (time-out,
 * network error, a non-2xx, redirected or unparsable answer, or one blaming the organization's
 * secret) is a 503 with Retry-After, never an admission, since admitting unverified posts while the
 * provider is down is what a spam run would wait for. The secret goes only to the verify URL, over
 * https on a deployed stage (settings.asDeployed), never to a redirect's target, and is never logged.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { DomainError } from '../platform/errors.js';
import type { CaptchaProvider } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { TtlCache } from '../platform/ttl-cache.js';
import { captchaSecret } from '../tenancy/organizations.js';
import { depsPort } from '../platform/deps-port.js';

/** Each provider's siteverify API and the form field its widget fills with the token. */
export const captchaProvidersSpec: Record<CaptchaProvider, { verifyUrl: string; field: string }> = {
  turnstile: { verifyUrl: 'https://challenges.cloudflare.com/turnstile/v0/siteverify', field: 'cf-turnstile-response' },
  hcaptcha: { verifyUrl: 'https://api.hcaptcha.com/siteverify', field: 'h-captcha-response' },
  recaptcha: { verifyUrl: 'https://www.google.com/recaptcha/api/siteverify', field: 'g-recaptcha-response' },
};

/** Every provider's token field: none of them is ever stored as a custom field. */
export const captchaTokenFields = Object.values(captchaProvidersSpec).map((p) => p.field);

/** The providers' siteverify error codes that blame the secret (the organization's setting), not the token. */
const SECRET_ERRORS = new Set(['missing-input-secret', 'invalid-input-secret', 'sitekey-secret-mismatch']);

/** Providers' tokens are about 2 KB; anything much longer is not one and is not forwarded. */
const MAX_TOKEN_LENGTH = 4096;

export const captchaFailed = (detail: string) => new DomainError(403, 'captcha-failed', 'CAPTCHA verification failed', detail);
const captchaUnavailable = () => new DomainError(503, 'captcha-unavailable', 'Service unavailable',
  'The CAPTCHA could not be verified right now; nothing was recorded. Retry shortly.', { headers: { 'Retry-After': '5' } });

/** The siteverify call: fetch, to the provider's host. Tests put a stub here (`siteVerifyPort.with`), never the network. */
export type SiteVerify = (url: string, init: RequestInit) => Promise<Response>;
export const siteVerifyPort = depsPort<SiteVerify>('captchaSiteVerify', () => fetch);

/** Secrets by organization, for as long as keys are cached (a changed secret applies as fast). */
const secrets = new TtlCache<string, string | undefined>(10_000);

export function clearCaptchaCache(): void {
  secrets.clear();
}

const secretOf = (deps: Deps, organizationId: string): Promise<string | undefined> =>
  secrets.getOrLoad(organizationId, deps.now(), deps.config.keyCacheTtlSeconds * 1000, () => captchaSecret(deps, organizationId));

/**
 * Verifies `token` (taken from the provider's field of the body) with the provider; returns when it
 * passes, throws 403 or 503 otherwise.
 */
export async function verifyCaptcha(deps: Deps, input: { organizationId: string; provider: CaptchaProvider; token: unknown; remoteIp?: string }): Promise<void> {
  const spec = captchaProvidersSpec[input.provider];
  const token = typeof input.token === 'string' ? input.token.trim() : '';
  if (!token) throw captchaFailed(`This form requires a CAPTCHA: send the ${input.provider} widget's token in "${spec.field}".`);
  if (token.length > MAX_TOKEN_LENGTH) throw captchaFailed('The CAPTCHA token is not valid.');
  const secret = await secretOf(deps, input.organizationId);
  if (!secret) {
    logger.error('captcha provider set without a secret', { organizationId: input.organizationId, provider: input.provider });
    throw captchaUnavailable();
  }
  const url = deps.config.captchaVerifyUrls[input.provider] ?? spec.verifyUrl;
  // asDeployed drops plain-http URLs on Lambda; this refuses one wherever it came from.
  if (!url.startsWith('https://') && !deps.config.local) {
    logger.error('captcha verify URL is not https; refusing to send the secret', { provider: input.provider });
    throw captchaUnavailable();
  }
  const form = new URLSearchParams({ secret, response: token, ...(input.remoteIp ? { remoteip: input.remoteIp } : {}) });
  let answer: { success?: unknown; 'error-codes'?: unknown };
  const started = Date.now();
  try {
    // fetch keeps connections alive between invocations of a warm container (undici's pool).
    const res = await siteVerifyPort.of(deps)(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form,
      // Never follow a redirect: fetch would re-send the body, the secret with it, to wherever it points (http too).
      redirect: 'error',
      signal: AbortSignal.timeout(deps.config.captchaTimeoutMs),
    });
    if (!res.ok) throw new Error(`siteverify answered ${res.status}`);
    answer = (await res.json()) as typeof answer;
  } catch (error) {
    logger.warn('captcha verification unavailable', { provider: input.provider, error: (error as Error).name, message: (error as Error).message, latencyMs: Date.now() - started });
    metrics.addMetric('CaptchaUnavailable', MetricUnit.Count, 1);
    throw captchaUnavailable();
  }
  if (answer.success !== true) {
    const codes = Array.isArray(answer['error-codes']) ? answer['error-codes'].filter((c): c is string => typeof c === 'string').slice(0, 5) : [];
    if (codes.some((c) => SECRET_ERRORS.has(c))) {
      // The organization's secret is wrong, not the visitor's token: every lead would fail. The
      // operator hears of it (error log, CaptchaUnavailable and its alarm); the visitor is not told why.
      logger.error('captcha provider rejected the organization\'s secret', { organizationId: input.organizationId, provider: input.provider, codes });
      metrics.addMetric('CaptchaUnavailable', MetricUnit.Count, 1);
      throw captchaUnavailable();
    }
    metrics.addMetric('CaptchaRejected', MetricUnit.Count, 1);
    throw captchaFailed(`The CAPTCHA was not passed${codes.length ? ` (${codes.join(', ')})` : ''}; nothing was recorded. Complete it and send the form again.`);
  }
}
