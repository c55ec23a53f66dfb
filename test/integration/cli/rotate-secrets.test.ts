/**
 * `crm webhooks rotate-secrets` (docs/operations.md "Rotating every signing secret"), against the
 * local stack: a dry run writes nothing; an organization's endpoints each get a new secret while the
 * old ones sign for the grace; one that cannot be rotated is reported and the others are not held
 * back; `--out` keeps the secrets out of the output. `--all` runs as a dry run here: the suite's
 * other organizations share the stack.
 */
import { describe, it, expect } from '@jest/globals';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newTenant, runCli, testStack } from '../support/stack.js';
import { addEndpoint, getEndpoint, MAX_SIGNING_SECRETS, rotateSecret } from '../../../functions/core/delivery/endpoints.js';

interface Summary { dryRun: boolean; endpoints: number; rotated: number; failed: number; outcomes: { organizationId: string; endpointId: string; secret?: string; error?: string }[] }

async function organizationWith(n: number) {
  const { deps } = await testStack();
  const { organizationId } = await newTenant({ name: 'Rotate All' });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await addEndpoint(deps, organizationId, { url: `http://127.0.0.1:9/hook-${i}`, events: 'all' })).endpoint.id);
  return { organizationId, ids };
}

describe('crm webhooks rotate-secrets', () => {
  it('a dry run lists the endpoints and writes nothing; a run rotates each with the grace, reports the one it cannot rotate, and exits 1', async () => {
    const { deps } = await testStack();
    const { organizationId, ids } = await organizationWith(3);
    const before = await Promise.all(ids.map((id) => getEndpoint(deps, organizationId, id)));

    const dry = await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.json<Summary>()).toMatchObject({ dryRun: true, endpoints: 3, rotated: 0, failed: 0 });
    expect(await Promise.all(ids.map((id) => getEndpoint(deps, organizationId, id)))).toEqual(before);

    // The third endpoint has MAX_SIGNING_SECRETS signing already: a rotation with a grace is refused for it alone.
    for (let i = 1; i < MAX_SIGNING_SECRETS; i++) await rotateSecret(deps, organizationId, ids[2], { graceHours: 1 });
    const run = await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--grace-hours', '2']);
    expect(run.code).toBe(1);
    const summary = run.json<Summary>();
    expect(summary).toMatchObject({ dryRun: false, endpoints: 3, rotated: 2, failed: 1 });
    expect(run.stderr).toContain('[3/3]');
    const refused = summary.outcomes.find((o) => o.endpointId === ids[2])!;
    expect(refused.secret).toBeUndefined();
    expect(refused.error).toContain(`${MAX_SIGNING_SECRETS} secrets signing`);
    for (const [i, id] of ids.slice(0, 2).entries()) {
      const stored = (await getEndpoint(deps, organizationId, id))!;
      const answered = summary.outcomes.find((o) => o.endpointId === id)!.secret!;
      // The new secret signs first; the old one goes on signing for the grace (2 h), then stops.
      expect(stored.secrets.map((s) => s.secret)).toEqual([answered, before[i]!.secrets[0].secret]);
      expect(Date.parse(stored.secrets[1].expiresAt!) - Date.parse(stored.secrets[0].createdAt)).toBe(2 * 3_600_000);
    }
  });

  it('--out writes the secrets to a new file of mode 600 and keeps them out of the output; --all covers every organization; flags are checked', async () => {
    const { deps } = await testStack();
    const { organizationId, ids } = await organizationWith(1);
    const dir = await mkdtemp(join(tmpdir(), 'crm-rotate-'));
    try {
      const out = join(dir, 'secrets.jsonl');
      const run = await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--grace-hours', '0', '--out', out]);
      expect(run.code).toBe(0);
      const [line] = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { endpointId: string; secret: string });
      expect(line.endpointId).toBe(ids[0]);
      expect((await getEndpoint(deps, organizationId, ids[0]))!.secrets.map((s) => s.secret)).toEqual([line.secret]); // grace 0: the old one dropped
      expect((await stat(out)).mode & 0o777).toBe(0o600);
      expect(run.stdout).not.toContain(line.secret);
      // An existing file is never overwritten (nor its secrets lost).
      expect((await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--out', out])).code).not.toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const all = await runCli(['webhooks', 'rotate-secrets', '--all', '--dry-run']);
    expect(all.code).toBe(0);
    expect(all.json<Summary>().outcomes).toEqual(expect.arrayContaining([expect.objectContaining({ organizationId, endpointId: ids[0] })]));
    expect((await runCli(['webhooks', 'rotate-secrets'])).code).toBe(2);
    expect((await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--all'])).code).toBe(2);
    expect((await runCli(['webhooks', 'rotate-secrets', '--org', organizationId, '--grace-hours', '-1'])).stderr).toContain('--grace-hours must be zero or more hours');
  });
});
