/**
 * The target stack's settings API, called as the settings page calls it (docs/settings.md), for the
 * commands whose work must run in the stage rather than in the operator's process: a short session
 * token minted from the stage's secret, as `crm settings-link` does, and a problem+json answer
 * turned into a CLI error carrying its detail.
 */
import { mintSessionToken } from '../../functions/core/settings/session-token.js';
import { requireOrganization } from '../../functions/core/tenancy/organizations.js';
import { CliError } from './output.js';
import type { Target } from './target.js';

/** The acting user the audit log records for the CLI's calls. */
export const CLI_USER = 'operator:cli';
/** Long enough for one call (the settings function's time-out is 20 s), short if it leaked. */
const TOKEN_TTL_SECONDS = 120;
/** Above the settings function's time-out: its own answer (or the gateway's) comes first. */
const CALL_TIMEOUT_MS = 35_000;

/** `method path` of the settings API as `organizationId`'s operator; the answer's JSON, or a CliError with the problem's detail. */
export async function callSettingsApi<T>(target: Target, organizationId: string, method: string, path: string, body: unknown = {}): Promise<T> {
  if (!target.apiUrl) throw new CliError(`${target.describe} has no API URL.`);
  // A missing organization is a clear "not found" here, not the API's 401 for a token naming it.
  await requireOrganization(target.deps, organizationId);
  const token = await mintSessionToken(await target.readSecret('settingsToken'), { organizationId, userId: CLI_USER, ttlSeconds: TOKEN_TTL_SECONDS });
  let response: Response;
  try {
    response = await fetch(`${target.apiUrl.replace(/\/$/, '')}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  } catch (error) {
    throw new CliError(`Cannot reach the settings API of ${target.describe} (${(error as Error).message}).`);
  }
  const text = await response.text();
  let answer: unknown;
  try {
    answer = text ? JSON.parse(text) : undefined;
  } catch {
    answer = undefined;
  }
  if (!response.ok) {
    const problem = (answer ?? {}) as { detail?: unknown; title?: unknown; errors?: { field?: unknown; message?: unknown }[] };
    const detail = typeof problem.detail === 'string' ? problem.detail : typeof problem.title === 'string' ? problem.title : `HTTP ${response.status}`;
    const fields = Array.isArray(problem.errors) ? problem.errors.map((e) => `\n  ${String(e.field)}: ${String(e.message)}`).join('') : '';
    throw new CliError(`${detail}${fields}`);
  }
  return answer as T;
}
