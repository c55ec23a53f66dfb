/**
 * `crm webhooks check <id>` against the local stack (docs/webhooks.md#checking-a-receiver): run by
 * the stack's settings API (the audit log records it, as `operator:cli`), never in the CLI's own
 * process; a readable table with the advice, exit code 1 when the receiver fails; 0 and the JSON
 * answer when it passes; the API's 429 as the CLI's error.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { runCli } from '../support/stack.js';
import { settingsClient } from '../settings/support.js';

/** A receiver on 127.0.0.1: `verify` null accepts everything; else the standardwebhooks library with the secret set later. */
function receiver(verify: boolean) {
  const state = { secret: '', url: '', server: undefined as Server | undefined };
  state.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (!verify) return res.writeHead(200).end('ok');
      try {
        new Webhook(state.secret.replace(/^whsec_/, '')).verify(body, req.headers as Record<string, string>);
        res.writeHead(204).end();
      } catch {
        res.writeHead(401).end();
      }
    });
  });
  return state;
}
const careless = receiver(false);
const strict = receiver(true);
beforeAll(async () => {
  for (const r of [careless, strict]) {
    await new Promise<void>((resolve) => r.server!.listen(0, '127.0.0.1', resolve));
    r.url = `http://127.0.0.1:${(r.server!.address() as AddressInfo).port}/hooks`;
  }
});
afterAll(async () => {
  await Promise.all([careless, strict].map((r) => new Promise<void>((resolve) => r.server!.close(() => resolve()))));
});

describe('crm webhooks check', () => {
  it('a careless receiver: a table naming each failed rule with advice, exit code 1; a verifying one passes with exit code 0; both run by the stack', async () => {
    const { id: org } = (await runCli(['org', 'create', '--name', 'CLI Check'])).json<{ id: string }>();
    const bad = (await runCli(['webhooks', 'add', '--org', org, '--url', careless.url])).json<{ id: string }>();
    const checked = await runCli(['webhooks', 'check', bad.id, '--org', org], { json: false });
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain(`Checking the receiver of ${bad.id}`);
    expect(checked.stdout).toMatch(/RULE +EXPECTED +STATUS +RESULT/);
    expect(checked.stdout).toMatch(/signed +2xx +200 +ok/);
    expect(checked.stdout).toMatch(/wrong-signature +refusal \(non-2xx\) +200 +FAIL/);
    expect(checked.stdout).toMatch(/stale-timestamp: .*docs\/webhooks\.md#checking-a-receiver-stale-timestamp/);
    expect(checked.stdout).toContain('Verdict: FAIL');

    const good = (await runCli(['webhooks', 'add', '--org', org, '--url', strict.url, '--rate-limit', '4'])).json<{ id: string; secret: string }>();
    strict.secret = good.secret;
    const passed = await runCli(['webhooks', 'check', good.id, '--org', org]);
    expect(passed.code).toBe(0);
    expect(passed.json()).toMatchObject({ verdict: 'pass', rules: expect.arrayContaining([expect.objectContaining({ rule: 'signed', status: 204, ok: true })]) });

    const again = await runCli(['webhooks', 'check', good.id, '--org', org], { json: false });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/retry in \d+ s/);

    // Run where deliveries run: the settings API checked them, and its audit log names the CLI.
    const audit = (await (await settingsClient(org)).get('/api/settings/audit')).json<{ entries: { action: string; userId: string; targetId: string }[] }>().entries;
    const checks = audit.filter((e) => e.action === 'endpoint.checked');
    expect(checks.map((e) => [e.targetId, e.userId]).sort()).toEqual([[bad.id, 'operator:cli'], [good.id, 'operator:cli']].sort());
  });

  it('an organization that does not exist is named, not a token refusal', async () => {
    const missing = await runCli(['webhooks', 'check', 'ep_missing', '--org', 'org_missing_cli_check'], { json: false });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/org_missing_cli_check/);
  });
});
