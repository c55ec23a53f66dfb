/**
 * The signing material the receiver check uses (docs/webhooks.md#checking-a-receiver): one seam,
 * so the check never knows the endpoint's scheme. `signerFor` answers how the endpoint signs now
 * (every active secret, as a delivery is signed), a deliberately wrong signature of the same scheme
 * (a fresh random secret, never stored), and the retired secret: one whose rotation grace has
 * ended but that the endpoint item still holds (rotation drops expired secrets only at the next
 * rotation: endpoints.ts rotateSecret), so the check can prove a receiver stopped accepting it.
 * Both schemes sign through `sign`, which takes each key's scheme from its prefix (`whsec_`: v1,
 * `whsk_`: v1a), so the check knows no scheme; the forged key is of the endpoint's own scheme.
 */
import type { WebhookEndpoint } from '../platform/model.js';
import { activeSecrets } from './endpoints.js';
import { newSigningKey, sign, signingOf, type WebhookHeaders } from './signing.js';

/** What a check request signs: the event id, Unix seconds, the exact body. */
export interface SignedContent { id: string; timestamp: number; body: string }

export interface CheckSigner {
  /** Signed as a delivery to the endpoint is signed now. */
  current(content: SignedContent): WebhookHeaders;
  /** Signed correctly in form, with material the receiver cannot hold. */
  forged(content: SignedContent): WebhookHeaders;
  /** Signed with the retired material alone; absent when the endpoint holds none past its grace. */
  retired?: (content: SignedContent) => WebhookHeaders;
  /** While a rotation's grace runs: when it ends (the retired rule is checked from then on). */
  graceUntil?: string;
}

/** The endpoint's check signer at `now` (epoch ms). Throws when no secret signs (as a delivery would fail). */
export function signerFor(endpoint: Pick<WebhookEndpoint, 'secrets'>, now: number): CheckSigner {
  const secrets = activeSecrets(endpoint as WebhookEndpoint, now);
  if (secrets.length === 0) throw new Error('the endpoint has no active signing secret');
  const expired = endpoint.secrets.filter((s) => s.expiresAt && Date.parse(s.expiresAt) <= now);
  const inGrace = endpoint.secrets.filter((s) => s.expiresAt && Date.parse(s.expiresAt) > now).map((s) => s.expiresAt!).sort();
  const newest = expired.sort((a, b) => Date.parse(b.expiresAt!) - Date.parse(a.expiresAt!))[0];
  // A fresh key of the endpoint's own scheme (a `v1a` receiver must refuse a well-formed `v1a` it cannot verify).
  const wrong = newSigningKey(signingOf(endpoint));
  return {
    current: (content) => sign({ ...content, secrets }),
    forged: (content) => sign({ ...content, secrets: [wrong] }),
    ...(newest ? { retired: (content: SignedContent) => sign({ ...content, secrets: [newest.secret] }) } : {}),
    ...(inGrace.length ? { graceUntil: inGrace[inGrace.length - 1] } : {}),
  };
}
