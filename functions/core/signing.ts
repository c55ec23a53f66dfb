/**
 * Standard Webhooks signatures (DESIGN §11): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">`, one per active secret, space-separated, so a receiver that has either the
 * old or the new secret verifies during a rotation. Receivers use the `standardwebhooks` library.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const newSigningSecret = (): string => 'whsec_' + randomBytes(32).toString('base64');

export interface SignInput { id: string; timestamp: number; body: string; secrets: string[] }

export function signatureHeaders({ id, timestamp, body, secrets }: SignInput): Record<string, string> {
  const content = `${id}.${timestamp}.${body}`;
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return 'v1,' + createHmac('sha256', key).update(content).digest('base64');
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
}
