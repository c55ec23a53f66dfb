/**
 * Standard Webhooks signatures (docs/webhooks.md#the-request): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">`, one per active secret, space-separated, so a receiver holding either the
 * old or the new secret verifies during a rotation (the caller passes both for 24 h). Receivers
 * verify with the `standardwebhooks` libraries; there is deliberately no verify helper here.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 bytes from the CSPRNG; shown to the user once. */
export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString('base64');

export interface SignInput {
  /** The event id (`webhook-id`); receivers dedupe on it. */
  id: string;
  /** Unix time in SECONDS (receivers reject timestamps more than 5 minutes off). */
  timestamp: number;
  /** The exact bytes sent, as a string: sign what you send, send what you signed. */
  body: string;
  /** Active secrets, `whsec_…` (the prefix is optional); at least one. */
  secrets: string[];
}

// A type alias, not an interface, so it is assignable to Record<string, string>.
export type WebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

export function sign({ id, timestamp, body, secrets }: SignInput): WebhookHeaders {
  if (!secrets.length) throw new Error('sign: no signing secret');
  // 1e11 s is the year 5138: a larger value is milliseconds, which every receiver would reject as stale.
  if (!Number.isSafeInteger(timestamp) || timestamp < 0 || timestamp >= 1e11) throw new Error(`sign: timestamp must be Unix seconds, got ${timestamp}`);
  const content = `${id}.${timestamp}.${body}`;
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
    return 'v1,' + createHmac('sha256', key).update(content, 'utf8').digest('base64');
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
}
