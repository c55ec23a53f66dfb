/**
 * A receiver that echoes every request header back (docs/webhooks.md "What the delivery log
 * keeps"): in its body as raw text, JSON, URL-encoded or base64, padded so the stored values
 * straddle the 4 KiB excerpt's end, and the authorization JSON-escaped in a response header. Test
 * events sent from the settings API through the local stack: the delivery log shows none of the
 * endpoint's stored header values nor its signing secret, however the echo is written.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant } from '../support/stack.js';
import { receiverForFile, type Echo } from '../support/receiver.js';
import { settingsClient } from '../settings/support.js';
import { MAX_RESPONSE_BODY_BYTES } from '../../../functions/core/delivery/http-client.js';

const receiver = receiverForFile();
const QUOTE = 'ab"cd\\\\ef-secretvalue';
const AUTH = 'Bearer SUPERSECRETVALUE-123456789';
type Attempt = { responseExcerpt: string | null; responseHeaders: Record<string, string> | null; error: string | null };

/** Whether `text` holds any piece of `value` long enough to matter, as it is or in a base64 run at any alignment. */
function leaks(text: string, value: string): boolean {
  const probes = [value.slice(0, 6), value.slice(-6), value.slice(8, 14)];
  const decodings = (text.match(/[A-Za-z0-9+/]{4,}/g) ?? []).flatMap((run) => [0, 1, 2, 3].map((skip) => Buffer.from(run.slice(skip), 'base64').toString('latin1')));
  return [text, ...decodings].some((t) => probes.some((p) => t.includes(p)));
}

describe('an echoing receiver cannot read stored secrets back through the delivery log', () => {
  const cases: [Echo, number][] = (['raw', 'json', 'url', 'base64'] as Echo[]).flatMap((echo) => [0, 3].map((i): [Echo, number] => [echo, i]));
  it.each(cases)('echoed as %s, offset %i around the cut: nothing of the header values or the signing secret is shown', async (echo, i) => {
    const path = `/echo-${echo}-${i}`;
    // One organization per case: an organization has a bounded number of endpoints.
    const admin = await settingsClient((await newTenant({ name: `Echoing receiver ${echo} ${i}` })).organizationId, 'dana');
    const added = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}${path}`, events: ['client.created'] })).json<{ endpoint: { id: string }; secret: string }>();
    expect((await admin.patch(`/api/settings/webhooks/${added.endpoint.id}`, { headers: { 'X-Quote': QUOTE, Authorization: AUTH } })).status).toBe(200);
    // Measure where the authorization lands in this echo, then pad so it straddles the excerpt's end at a different offset each time.
    receiver.script(path, added.secret, { status: 200, echo });
    expect((await admin.post(`/api/settings/webhooks/${added.endpoint.id}/test`)).status).toBe(200);
    const first = receiver.on(path).at(-1)!;
    const at = locate(echoOf(echo, first.headers as Record<string, string>), echo);
    expect(at).toBeGreaterThan(0);
    const pad = Math.max(0, MAX_RESPONSE_BODY_BYTES - at - 4 - 7 * i);
    receiver.script(path, added.secret, { status: 200, echo, pad });

    const tested = await admin.post(`/api/settings/webhooks/${added.endpoint.id}/test`);
    expect(tested.status).toBe(200);
    const { delivery } = tested.json<{ delivery: { id: string; attempts: Attempt[] } }>();
    expect(receiver.on(path).at(-1)!.headers.authorization).toBe(AUTH);
    const detail = await admin.get(`/api/settings/deliveries/${delivery.id}`);
    const shown = [tested.text, detail.text, ...delivery.attempts.map((a) => JSON.stringify(a))];
    for (const value of [QUOTE, AUTH.slice('Bearer '.length), added.secret.replace(/^whsec_/, '')]) {
      expect({ value, leaked: shown.filter((t) => leaks(t, value)).length }).toEqual({ value, leaked: 0 });
    }
    expect(delivery.attempts.at(-1)!.responseHeaders).toMatchObject({ 'x-echo': '"(redacted)"' });
  });
});

/** The echo of these headers as the receiver writes it (support/receiver.ts), without padding. */
function echoOf(echo: Echo, headers: Record<string, string>): string {
  if (echo === 'raw') return Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\n');
  if (echo === 'url') return new URLSearchParams(Object.entries(headers)).toString();
  if (echo === 'base64') return Buffer.from(JSON.stringify(headers)).toString('base64');
  return JSON.stringify(headers);
}

/** Where the authorization value starts in an unpadded echo (for base64: the byte offset scaled to characters). */
function locate(text: string, echo: Echo): number {
  return echo === 'base64' ? Math.floor(Buffer.from(text, 'base64').toString('latin1').indexOf('SUPERSECRET') * 4 / 3) : text.indexOf('SUPERSECRET');
}
