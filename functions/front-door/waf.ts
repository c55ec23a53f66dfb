/**
 * The WAF (AWS WAFv2, REGIONAL) in front of the stage: its rate rules and the transforms they count
 * key headers after. The CDK stack renders them (lib/stacks/crm-api.ts); the local front door
 * (lib/local/http-server.ts) counts requests with the same functions (docs/capacity.md).
 */
import { rateLimitCeilingPerMinute } from '../core/platform/config.js';

/** WAF text transformations, applied in order to a value before it is matched or counted. */
export type WafTransform = 'LOWERCASE' | 'COMPRESS_WHITE_SPACE';
export function applyWafTransforms(value: string, transforms: WafTransform[]): string {
  return transforms.reduce((v, t) => (t === 'LOWERCASE' ? v.toLowerCase() : v.replace(/[ \f\t\n\r\v\u00a0]+/g, ' ')), value);
}

/** A header that carries an API key, and the shape of a well-formed one (matched after LOWERCASE). */
export interface WafKeySpec { header: string; pattern: string }

/**
 * A rate-based rule, in priority order; the first
 * that blocks ends the evaluation (later rules do not count that request). Over `limit` requests in
 * the trailing `windowSeconds` per key (a well-formed key header's value after `transforms`, or the
 * client address), the key is blocked (the WAF_FILTERED answer) until its rate falls back.
 * `withoutKey`: only requests carrying no well-formed key; `exceptMethods`: methods never counted.
 */
export interface WafRuleSpec {
  name: string;
  key: { header: WafKeySpec; transforms: WafTransform[] } | { address: true };
  withoutKey?: boolean;
  exceptMethods?: string[];
  limit: number;
  windowSeconds: 60 | 120 | 300 | 600;
}

/**
 * Per key: the ceiling of every per-key limit (functions/core/platform/config.ts
 * `rateLimitCeilingPerMinute`), so a key within its own limit never meets the WAF first.
 */
export const wafKeyLimitPerMinute = rateLimitCeilingPerMinute;
/** The per-key rules' window: a blocked key is let through again within it. */
export const wafKeyWindowSeconds = 60;
/** Per address, all requests: 120/s over 5 minutes, above one key at the WAF's key limit (docs/capacity.md). */
export const wafAddressLimitPer5Minutes = 36_000;
/** functions/core/tenancy/api-keys.ts: `crm_live_` (secret) or `crm_pub_` (publishable, docs/leads.md#lead-forms-in-public-pages-publishable-keys) + base62 (lowercased here). */
const keyFormat = 'crm_(live|pub)_[0-9a-z]+';
/** The function accepts exactly these shapes (functions/core/tenancy/authenticate.ts), "Bearer" in any case. */
export const wafKeys = {
  apiKey: { header: 'x-api-key', pattern: `^${keyFormat}$` },
  bearer: { header: 'authorization', pattern: `^bearer ${keyFormat}$` },
} satisfies Record<string, WafKeySpec>;
// WAF counts exact header values: case and whitespace variants of one key must be one key.
const keyTransforms: WafTransform[] = ['LOWERCASE', 'COMPRESS_WHITE_SPACE'];
export const wafRules: WafRuleSpec[] = [
  // Random well-formed keys never trip a per-key rule: one address is bounded whatever it sends.
  { name: 'PerAddress', key: { address: true }, limit: wafAddressLimitPer5Minutes, windowSeconds: 300 },
  { name: 'PerApiKey', key: { header: wafKeys.apiKey, transforms: keyTransforms }, limit: wafKeyLimitPerMinute, windowSeconds: wafKeyWindowSeconds },
  { name: 'PerBearerKey', key: { header: wafKeys.bearer, transforms: keyTransforms }, limit: wafKeyLimitPerMinute, windowSeconds: wafKeyWindowSeconds },
  // Requests with no well-formed key header get 401s (malformed ones are never a key of their own, so
  // their variants cannot dodge a limit); a flood of them must not spend the lead methods' buckets.
  // No-script form posts carry their publishable key in the body (WAF cannot key on a body field):
  // they count here, 600/min per address, far above the function's per-address window (5/min).
  // CORS preflights carry no key by design: a NATed office's burst of form posts must not lose them.
  { name: 'PerAddressWithoutKey', key: { address: true }, withoutKey: true, exceptMethods: ['OPTIONS'], limit: 600, windowSeconds: 60 },
];

/** The well-formed key headers a request carries (what the per-key rules count it under). */
export function wellFormedKeys(header: (name: string) => string | undefined): WafKeySpec[] {
  return Object.values(wafKeys).filter((k) => {
    const value = header(k.header);
    return value !== undefined && new RegExp(k.pattern).test(applyWafTransforms(value, ['LOWERCASE']));
  });
}
