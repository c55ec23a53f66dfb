/**
 * ed25519 (`v1a`) endpoints through the real interfaces (docs/webhooks.md#verifying-ed25519-signatures):
 * the settings API shows the public key, a real delivery to a loopback receiver verifies with it
 * using the Node and Python code docs/webhooks.md shows (taken from the page, run as written), a
 * rotation signs with both keys through its grace and then with the new one only, and a switch
 * from hmac keeps the old secret signing through the grace.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { eventually, itemsOf, newTenant, runCli } from '../support/stack.js';
import { receiverForFile, type Received } from '../support/receiver.js';
import { settingsClient } from '../settings/support.js';

const receiver = receiverForFile();

interface SigningKey { scheme: 'hmac' | 'ed25519'; public_key?: string; expires_at: string | null }
interface Endpoint { id: string; signing: 'hmac' | 'ed25519'; public_key?: string; signing_keys: SigningKey[] }

/** The fenced blocks of one language in docs/webhooks.md's ed25519 section, as the page shows them. */
function documented(language: 'js' | 'python'): string {
  const page = readFileSync(join(process.cwd(), 'docs/webhooks.md'), 'utf8');
  const start = page.indexOf('## Verifying ed25519 signatures');
  const section = page.slice(start, page.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].filter((m) => m[1] === language).map((m) => m[2]!);
  if (start < 0 || blocks.length !== 1) throw new Error(`docs/webhooks.md: expected one ${language} block under "Verifying ed25519 signatures", found ${blocks.length}`);
  return blocks[0]!;
}

const dir = mkdtempSync(join(tmpdir(), 'crm-ed25519-docs-'));
type Verdict = { ok: true; event: { id: string; type: string } } | { ok: false; error: string };
type Verifier = (publicKey: string, request: Pick<Received, 'headers'> & { body: Buffer }) => Verdict;

/** Runs a documented snippet in its own process with one request: its verdict, as the receiver would see it. */
const run = (command: string, args: string[]): Verifier => (publicKey, request) => {
  const input = JSON.stringify({ publicKey, headers: request.headers, body: request.body.toString('base64') });
  return JSON.parse(execFileSync(command, args, { input, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 15_000 })) as Verdict;
};

function nodeVerifier(): Verifier {
  writeFileSync(join(dir, 'verify.mjs'), documented('js'));
  writeFileSync(join(dir, 'harness.mjs'), `
import { readFileSync } from 'node:fs';
import { verifyWebhook } from './verify.mjs';
const { publicKey, headers, body } = JSON.parse(readFileSync(0, 'utf8'));
try { console.log(JSON.stringify({ ok: true, event: verifyWebhook(publicKey, headers, Buffer.from(body, 'base64')) })); }
catch (error) { console.log(JSON.stringify({ ok: false, error: error.message })); }
`);
  return run(process.execPath, [join(dir, 'harness.mjs')]);
}

function pythonVerifier(): Verifier {
  // Never a silent skip: CI installs it (.ci/run); without it the documented Python cannot be checked.
  const probe = spawnSync('python3', ['-c', 'import cryptography'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    throw new Error(`Python's "cryptography" package is missing (python3 -c "import cryptography": ${probe.error?.message ?? probe.stderr.trim()}): `
      + 'install python3-cryptography (apt) or `pip install cryptography`; .ci/run installs it. docs/webhooks.md\'s Python verification is tested with it.');
  }
  writeFileSync(join(dir, 'verify.py'), `${documented('python')}

if __name__ == "__main__":
    import sys
    request = json.loads(sys.stdin.read())
    try:
        print(json.dumps({"ok": True, "event": verify_webhook(request["publicKey"], request["headers"], base64.b64decode(request["body"]))}))
    except ValueError as error:
        print(json.dumps({"ok": False, "error": str(error)}))
`);
  return run('python3', [join(dir, 'verify.py')]);
}

let verifiers: [string, Verifier][] = [];
beforeAll(() => {
  verifiers = [['node', nodeVerifier()], ['python', pythonVerifier()]];
});

/** The bytes the receiver got, as it got them. */
const asReceived = (r: Received) => ({ headers: r.headers, body: Buffer.from(r.body, 'utf8') });
const signatures = (r: Received) => String(r.headers['webhook-signature']).split(' ').map((s) => s.split(',')[0]);

/** Each documented verifier's verdict on `request` with `publicKey`. */
const verdicts = (publicKey: string, request: ReturnType<typeof asReceived>) =>
  Object.fromEntries(verifiers.map(([name, verify]) => [name, verify(publicKey, request)]));

async function sendTest(admin: Awaited<ReturnType<typeof settingsClient>>, endpointId: string, path: string): Promise<Received> {
  const before = receiver.on(path).length;
  const tested = await admin.post(`/api/settings/webhooks/${endpointId}/test`);
  expect(tested.json()).toMatchObject({ delivery: { status: 'delivered' } });
  return eventually(async () => receiver.on(path).length > before && receiver.on(path).at(-1)!, { what: `a request on ${path}` });
}

describe('ed25519 (v1a) endpoints', () => {
  it('a delivery verifies with the public key the API showed, by the Node and Python code of docs/webhooks.md; the private key is never shown', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const path = '/ed25519-ok';
    receiver.script(path, '', { status: 204 });
    const added = await admin.post('/api/settings/webhooks', { url: receiver.url + path, events: ['client.created'], signing: 'ed25519' });
    expect(added.status).toBe(201);
    const { endpoint, secret } = added.json<{ endpoint: Endpoint; secret?: string }>();
    expect(secret).toBeUndefined();
    expect(endpoint).toMatchObject({ signing: 'ed25519', public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/), signing_keys: [{ scheme: 'ed25519', expires_at: null }] });
    expect(Buffer.from(endpoint.public_key!.slice(5), 'base64')).toHaveLength(32);
    const listed = await admin.get('/api/settings/webhooks');
    expect(listed.json<{ endpoints: Endpoint[] }>().endpoints).toEqual([expect.objectContaining({ id: endpoint.id, signing: 'ed25519', public_key: endpoint.public_key })]);

    // Stored like signing secrets; in no answer.
    const [item] = await itemsOf('endpoints', organizationId, 'ENDPOINT#');
    const privateKey = (item!.secrets as { secret: string }[])[0]!.secret;
    expect(privateKey).toMatch(/^whsk_/);
    for (const text of [added.text, listed.text]) expect(text).not.toContain(privateKey.slice(5, 30));

    const received = await sendTest(admin, endpoint.id, path);
    expect(signatures(received)).toEqual(['v1a']);
    const request = asReceived(received);
    expect(verdicts(endpoint.public_key!, request)).toEqual({
      node: { ok: true, event: expect.objectContaining({ type: 'webhook.test', id: received.headers['webhook-id'] }) },
      python: { ok: true, event: expect.objectContaining({ type: 'webhook.test', id: received.headers['webhook-id'] }) },
    });
    // The same code refuses a changed body, another key, a stale timestamp.
    const changed = { ...request, body: Buffer.from(`${received.body} `, 'utf8') }; // one byte more, still JSON
    const refused = { node: { ok: false, error: expect.any(String) }, python: { ok: false, error: expect.any(String) } };
    expect(verdicts(endpoint.public_key!, changed)).toEqual(refused);
    const other = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}/ed25519-other`, events: ['client.created'], signing: 'ed25519' })).json<{ endpoint: Endpoint }>().endpoint;
    expect(verdicts(other.public_key!, request)).toEqual(refused);
    expect(verdicts(endpoint.public_key!, { ...request, headers: { ...request.headers, 'webhook-timestamp': String(Number(request.headers['webhook-timestamp']) - 600) } })).toEqual(refused);
  }, 60_000);

  it('the CLI adds an ed25519 endpoint and prints its public key, never a secret', async () => {
    const { organizationId } = await newTenant();
    const added = await runCli(['webhooks', 'add', '--org', organizationId, '--url', `${receiver.url}/ed25519-cli`, '--signing', 'ed25519'], { json: false });
    expect(added.code).toBe(0);
    const [item] = await itemsOf('endpoints', organizationId, 'ENDPOINT#');
    const stored = (item!.secrets as { secret: string }[])[0]!.secret;
    expect(added.stdout).toContain(`whpk_${Buffer.from(stored.slice(5), 'base64').subarray(32).toString('base64')}`);
    expect(added.stdout).not.toMatch(/whsec_|whsk_/);
    const listed = await runCli(['webhooks', 'list', '--org', organizationId]);
    expect(listed.json<{ signing: string; publicKey: string }[]>()).toEqual([expect.objectContaining({ signing: 'ed25519', publicKey: expect.stringMatching(/^whpk_/) })]);
    expect(listed.stdout).not.toContain('whsk_');
    expect((await runCli(['webhooks', 'add', '--org', organizationId, '--url', `${receiver.url}/x`, '--signing', 'rsa'], { json: false })).stderr).toContain('--signing must be hmac or ed25519');
  }, 60_000);

  it('a rotation signs with both keys through its grace (both public keys shown with its end), then with the new one only', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const path = '/ed25519-rotated';
    receiver.script(path, '', { status: 204 });
    const { endpoint: first } = (await admin.post('/api/settings/webhooks', { url: receiver.url + path, events: ['client.created'], signing: 'ed25519' })).json<{ endpoint: Endpoint }>();
    // A grace of a few seconds: long enough to send within it, short enough to wait out.
    const rotated = await admin.post(`/api/settings/webhooks/${first.id}/rotate-secret`, { grace_hours: 0.002 });
    expect(rotated.status).toBe(200);
    const { endpoint, secret } = rotated.json<{ endpoint: Endpoint; secret?: string }>();
    expect(secret).toBeUndefined();
    expect(endpoint.public_key).not.toBe(first.public_key);
    expect(endpoint.signing_keys).toEqual([
      { scheme: 'ed25519', public_key: endpoint.public_key, expires_at: null },
      { scheme: 'ed25519', public_key: first.public_key, expires_at: expect.any(String) },
    ]);
    const until = Date.parse(endpoint.signing_keys[1]!.expires_at!);

    const during = await sendTest(admin, endpoint.id, path);
    expect(Date.now()).toBeLessThan(until); // else the grace was too short for this machine: the test proves nothing
    expect(signatures(during)).toEqual(['v1a', 'v1a']);
    for (const key of [endpoint.public_key!, first.public_key!]) expect(verdicts(key, asReceived(during))).toMatchObject({ node: { ok: true }, python: { ok: true } });

    await eventually(async () => Date.now() > until, { what: 'the rotation grace to end' });
    const after = await sendTest(admin, endpoint.id, path);
    expect(signatures(after)).toEqual(['v1a']);
    expect(verdicts(endpoint.public_key!, asReceived(after))).toMatchObject({ node: { ok: true }, python: { ok: true } });
    expect(verdicts(first.public_key!, asReceived(after))).toMatchObject({ node: { ok: false }, python: { ok: false } });
    const listed = (await admin.get('/api/settings/webhooks')).json<{ endpoints: Endpoint[] }>().endpoints[0]!;
    expect(listed.signing_keys).toEqual([{ scheme: 'ed25519', public_key: endpoint.public_key, expires_at: null }]);
  }, 60_000);

  it('a delivery in flight is signed as its endpoint is when each attempt is sent: a retry after a switch carries the new scheme', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const path = '/ed25519-in-flight';
    const { endpoint: hmac, secret } = (await admin.post('/api/settings/webhooks', { url: receiver.url + path, events: ['client.created'] })).json<{ endpoint: Endpoint; secret: string }>();
    // Refused twice (the test schedule retries 1 s apart): time to switch before the attempt that succeeds.
    receiver.script(path, secret, { status: 500 }, { status: 500 }, { status: 204 });
    const tested = (await admin.post(`/api/settings/webhooks/${hmac.id}/test`)).json<{ delivery: { id: string; status: string } }>().delivery;
    expect(tested.status).toBe('retrying');
    const { endpoint } = (await admin.patch(`/api/settings/webhooks/${hmac.id}`, { signing: 'ed25519', grace_hours: 0 })).json<{ endpoint: Endpoint }>();
    await eventually(async () => (await admin.get(`/api/settings/deliveries/${tested.id}`)).json<{ delivery: { status: string } }>().delivery.status === 'delivered', { what: 'the retried delivery' });
    const attempts = receiver.on(path);
    expect(signatures(attempts[0]!)).toEqual(['v1']);
    expect(attempts[0]!.verifyError).toBeUndefined();
    const last = attempts.at(-1)!;
    expect(last.headers['webhook-id']).toBe(attempts[0]!.headers['webhook-id']);
    expect(signatures(last)).toEqual(['v1a']);
    expect(verdicts(endpoint.public_key!, asReceived(last))).toMatchObject({ node: { ok: true }, python: { ok: true } });
  }, 60_000);

  it('switching an hmac endpoint to ed25519 keeps the hmac secret signing through the grace; switching back shows a new secret once', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const path = '/ed25519-switched';
    const { endpoint: hmac, secret } = (await admin.post('/api/settings/webhooks', { url: receiver.url + path, events: ['client.created'] })).json<{ endpoint: Endpoint; secret: string }>();
    expect(hmac).toMatchObject({ signing: 'hmac', signing_keys: [{ scheme: 'hmac', expires_at: null }] });
    expect(hmac.public_key).toBeUndefined();
    receiver.script(path, secret, { status: 204 }); // the receiver still verifies v1 with the standardwebhooks library

    const switched = await admin.patch(`/api/settings/webhooks/${hmac.id}`, { signing: 'ed25519', grace_hours: 1 });
    expect(switched.status).toBe(200);
    const { endpoint } = switched.json<{ endpoint: Endpoint; secret?: string }>();
    expect(switched.json()).not.toHaveProperty('secret');
    expect(endpoint).toMatchObject({ signing: 'ed25519', public_key: expect.stringMatching(/^whpk_/) });
    expect(endpoint.signing_keys.map((k) => [k.scheme, k.expires_at === null])).toEqual([['ed25519', true], ['hmac', false]]);

    const during = await sendTest(admin, hmac.id, path);
    expect(signatures(during)).toEqual(['v1a', 'v1']);
    expect(during.verifyError).toBeUndefined();
    expect(verdicts(endpoint.public_key!, asReceived(during))).toMatchObject({ node: { ok: true }, python: { ok: true } });

    const back = await admin.patch(`/api/settings/webhooks/${hmac.id}`, { signing: 'hmac', grace_hours: 0 });
    const { endpoint: again, secret: newSecret } = back.json<{ endpoint: Endpoint; secret: string }>();
    expect(newSecret).toMatch(/^whsec_/);
    expect(again).toMatchObject({ signing: 'hmac', signing_keys: [{ scheme: 'hmac', expires_at: null }] });
    receiver.script(path, newSecret, { status: 204 });
    const after = await sendTest(admin, hmac.id, path);
    expect(signatures(after)).toEqual(['v1']);
    expect(new Webhook(newSecret).verify(after.body, after.headers as Record<string, string>)).toMatchObject({ type: 'webhook.test' });
    expect((await admin.patch(`/api/settings/webhooks/${hmac.id}`, { signing: 'rsa' })).status).toBe(422);
    expect((await admin.patch(`/api/settings/webhooks/${hmac.id}`, { grace_hours: 2 })).json()).toMatchObject({ status: 422, errors: [{ field: 'grace_hours' }] });
  }, 60_000);
});
