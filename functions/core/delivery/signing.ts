/**
 * Standard Webhooks signatures (docs/webhooks.md#the-request), two schemes, chosen per endpoint:
 * - `hmac` (`v1`): HMAC-SHA256 with a shared secret, `whsec_` + base64 of 32 random bytes;
 * - `ed25519` (`v1a`): an ed25519 signature with the endpoint's private key, `whsk_` + base64 of the
 *   64-byte secret key as the spec's reference implementation (Svix) serializes an ed25519 key
 *   pair: the 32-byte seed, then the 32-byte public key. Receivers hold only the public key,
 *   `whpk_` + base64 of its raw 32 bytes (publicKeyOf).
 * Both sign `{webhook-id}.{webhook-timestamp}.{body}`. Every key in effect signs (signersOf): the
 * newest, and the older ones still inside a rotation's or a scheme switch's grace, their signatures
 * space-separated (`v1,… v1a,…` mixed), so a receiver holding any of them verifies.
 *
 * The one entry point for signing an endpoint's request is `signFor(endpoint, request, now)`;
 * `sign` signs with given keys (the scheme of each read from its prefix). Receivers verify with the
 * `standardwebhooks` libraries (v1) or node:crypto / Python's `cryptography` (v1a, docs/webhooks.md);
 * there is deliberately no verify helper here.
 */
import { createPrivateKey, createHmac, generateKeyPairSync, randomBytes, sign as signBytes, type KeyObject } from 'node:crypto';
import type { WebhookEndpoint } from '../platform/model.js';

/** `hmac`: `v1` signatures with a `whsec_` secret; `ed25519`: `v1a` signatures with a `whsk_` private key. */
export type SigningScheme = 'hmac' | 'ed25519';
export const SIGNING_SCHEMES: readonly SigningScheme[] = ['hmac', 'ed25519'];

const HMAC_PREFIX = 'whsec_';
const PRIVATE_PREFIX = 'whsk_';
const PUBLIC_PREFIX = 'whpk_';

/** `whsec_` + base64 of 32 bytes from the CSPRNG; shown to the user once. */
export const newSigningSecret = (): string => HMAC_PREFIX + randomBytes(32).toString('base64');

/** A new ed25519 private key, `whsk_` + base64(seed ‖ public key); never shown (its public key is). */
export function newSigningKeyPair(): string {
  const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  return PRIVATE_PREFIX + Buffer.concat([Buffer.from(jwk.d!, 'base64url'), Buffer.from(jwk.x!, 'base64url')]).toString('base64');
}

/** New signing material of a scheme: a `whsec_` secret or a `whsk_` private key. */
export const newSigningKey = (scheme: SigningScheme): string => (scheme === 'ed25519' ? newSigningKeyPair() : newSigningSecret());

/** The scheme a stored secret or key signs with, read from its prefix (items from before ed25519 hold `whsec_` secrets: hmac). */
export const schemeOf = (secret: string): SigningScheme => (secret.startsWith(PRIVATE_PREFIX) ? 'ed25519' : 'hmac');

/** The fixed DER head of an ed25519 private key in PKCS#8 (RFC 8410): the 32-byte seed follows. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A `whsk_` key's seed and public key (the 64-byte form; a bare 32-byte seed is taken too, its public key derived). */
function keyPairOf(secret: string): { seed: Buffer; publicKey: Buffer; key: KeyObject } {
  const raw = Buffer.from(secret.slice(PRIVATE_PREFIX.length), 'base64');
  if (raw.length !== 64 && raw.length !== 32) throw new Error('signing: an ed25519 key must be 32 or 64 bytes');
  const seed = raw.subarray(0, 32);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  const derived = Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
  if (raw.length === 64 && !derived.equals(raw.subarray(32))) throw new Error('signing: the ed25519 key\'s public half does not match its seed');
  return { seed, publicKey: derived, key };
}

/** The public key of a `whsk_` private key: `whpk_` + base64 of the raw 32 bytes, what receivers verify with. */
export const publicKeyOf = (secret: string): string => PUBLIC_PREFIX + keyPairOf(secret).publicKey.toString('base64');

/** One key in effect: what signs, its scheme, and until when it does (absent: the current one). */
export interface Signer {
  scheme: SigningScheme;
  /** `whsec_…` or `whsk_…`: never shown, never logged. */
  secret: string;
  /** Set while in a rotation's or scheme switch's grace: it stops signing then. */
  expiresAt?: string;
}

/**
 * The keys that sign an endpoint's request sent at `now` (epoch ms): the newest first, then any
 * still inside their grace. The delivery reads the endpoint at send time, so a rotation or a
 * scheme switch applies to every attempt made after it, in flight or not.
 */
export const signersOf = (endpoint: Pick<WebhookEndpoint, 'secrets'>, now: number): Signer[] =>
  endpoint.secrets
    .filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now)
    .map((s) => ({ scheme: schemeOf(s.secret), secret: s.secret, ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}) }));

/** An endpoint's scheme: its newest key's (items from before ed25519: hmac). */
export const signingOf = (endpoint: Pick<WebhookEndpoint, 'secrets'>): SigningScheme =>
  (endpoint.secrets[0] ? schemeOf(endpoint.secrets[0].secret) : 'hmac');

export interface SignInput {
  /** The event id (`webhook-id`); receivers dedupe on it. */
  id: string;
  /** Unix time in SECONDS (receivers reject timestamps more than 5 minutes off). */
  timestamp: number;
  /** The exact bytes sent, as a string: sign what you send, send what you signed. */
  body: string;
  /** Active keys: `whsec_…` secrets (the prefix is optional) and `whsk_…` private keys, mixed; at least one. */
  secrets: string[];
}

// A type alias, not an interface, so it is assignable to Record<string, string>.
export type WebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** The signature of `content` with one key: `v1,<base64 HMAC>` or `v1a,<base64 ed25519>`. */
function signatureOf(secret: string, content: string): string {
  if (schemeOf(secret) === 'ed25519') return 'v1a,' + signBytes(null, Buffer.from(content, 'utf8'), keyPairOf(secret).key).toString('base64');
  const key = Buffer.from(secret.startsWith(HMAC_PREFIX) ? secret.slice(HMAC_PREFIX.length) : secret, 'base64');
  return 'v1,' + createHmac('sha256', key).update(content, 'utf8').digest('base64');
}

export function sign({ id, timestamp, body, secrets }: SignInput): WebhookHeaders {
  if (!secrets.length) throw new Error('sign: no signing secret');
  // 1e11 s is the year 5138: a larger value is milliseconds, which every receiver would reject as stale.
  if (!Number.isSafeInteger(timestamp) || timestamp < 0 || timestamp >= 1e11) throw new Error(`sign: timestamp must be Unix seconds, got ${timestamp}`);
  const content = `${id}.${timestamp}.${body}`;
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': secrets.map((s) => signatureOf(s, content)).join(' ') };
}

/**
 * The headers signing `request` as `endpoint` signs at `now` (epoch ms): every key in effect
 * (signersOf), whatever their schemes. The timestamp is `now` in seconds unless given.
 * Throws when no key is in effect (deliver.ts checks signersOf first and records why).
 */
export const signFor = (endpoint: Pick<WebhookEndpoint, 'secrets'>, request: { id: string; body: string; timestamp?: number }, now: number): WebhookHeaders =>
  sign({ id: request.id, body: request.body, timestamp: request.timestamp ?? Math.floor(now / 1000), secrets: signersOf(endpoint, now).map((s) => s.secret) });
