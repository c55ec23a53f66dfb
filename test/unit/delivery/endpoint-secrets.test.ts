/**
 * An endpoint's signing secrets (docs/webhooks.md "Rotating the secret"), endpoints.ts rotateSecret
 * on the endpoints store's twin with a test clock: the grace keeps the older secrets signing until
 * it ends (never past an expiry set before), at most MAX_SIGNING_SECRETS sign at once, and a
 * rotation that lost the version race reads again and rotates on top.
 */
import { describe, it, expect, jest } from '@jest/globals';
import { defaultConfig } from '../../../functions/core/platform/config.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { metrics } from '../../../functions/core/platform/observability.js';
import { retryLostRaces } from '../../../functions/core/platform/optimistic.js';
import type { WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { activeSecrets, getEndpoint, MAX_SIGNING_SECRETS, rotateSecret, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { publicKeyOf, schemeOf } from '../../../functions/core/delivery/signing.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';

jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const HOUR = 3_600_000;

async function given() {
  const clock = { now: T0 };
  const store = new MemoryEndpointStore();
  const deps = withContainerMemory(withEndpointStore({ now: () => clock.now, config: defaultConfig } as unknown as Deps, store), new ContainerMemory());
  const endpoint: WebhookEndpoint = {
    id: 'ep_secrets', organizationId: 'org_secrets', url: 'https://receiver.example.com/hook', events: ['*'],
    secrets: [{ secret: 'whsec_first', createdAt: new Date(T0).toISOString() }], secretsVersion: 1, enabled: true, createdAt: new Date(T0).toISOString(),
  };
  await retryLostRaces('given', () => store.createEndpoint(endpoint, 10));
  const signing = async () => activeSecrets((await getEndpoint(deps, endpoint.organizationId, endpoint.id))!, clock.now);
  return { clock, store, deps, endpoint, signing };
}

describe('rotating an endpoint’s secret', () => {
  it('keeps the old secret signing through its grace, then only the new one', async () => {
    const { clock, deps, endpoint, signing } = await given();
    const { secret } = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 });
    expect(await signing()).toEqual([secret, 'whsec_first']);
    clock.now = T0 + 24 * HOUR - 1;
    expect(await signing()).toEqual([secret, 'whsec_first']);
    clock.now = T0 + 24 * HOUR;
    expect(await signing()).toEqual([secret]);
  });

  it('a second rotation never extends the first one’s grace; grace 0 stops every older secret at once', async () => {
    const { clock, deps, endpoint, signing } = await given();
    await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 1 });
    clock.now = T0 + 30 * 60_000;
    const { secret: third } = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 });
    clock.now = T0 + HOUR;
    expect(await signing()).toHaveLength(2); // the first secret's grace ended at T0 + 1 h, as set
    expect((await signing())).not.toContain('whsec_first');
    const { secret: fourth } = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 0 });
    expect(await signing()).toEqual([fourth]);
    expect(await signing()).not.toContain(third);
  });

  it(`refuses a rotation with a grace while ${MAX_SIGNING_SECRETS} secrets sign; one with grace 0 still works`, async () => {
    const { deps, endpoint, signing } = await given();
    for (let i = 1; i < MAX_SIGNING_SECRETS; i++) await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 });
    expect(await signing()).toHaveLength(MAX_SIGNING_SECRETS);
    await expect(rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 })).rejects.toMatchObject({ status: 422 });
    const { secret } = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 0 });
    expect(await signing()).toEqual([secret]);
  });

  it('a rotation that lost the version race reads again and rotates on top: the answered secret is the stored one', async () => {
    const { deps, store, endpoint, signing } = await given();
    store.inject('rotateSecret', 'lost-race', 2);
    const { secret } = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 });
    expect(await signing()).toEqual([secret, 'whsec_first']);
    expect(store.calls.filter((c) => c === 'rotateSecret')).toHaveLength(3);
    expect((await getEndpoint(deps, endpoint.organizationId, endpoint.id))!.secretsVersion).toBe(2);
  });
});

describe('switching an endpoint’s signing scheme (docs/webhooks.md#verifying-ed25519-signatures)', () => {
  it('hmac → ed25519: the new key signs at once, the hmac secret too until the grace ends; nothing secret is answered', async () => {
    const { clock, deps, endpoint, signing } = await given();
    const switched = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { signing: 'ed25519', graceHours: 2 });
    expect(switched.secret).toBeUndefined();
    expect(switched.signing).toBe('ed25519');
    const [key] = await signing();
    expect(switched.publicKey).toBe(publicKeyOf(key!));
    expect(await signing()).toEqual([key, 'whsec_first']);
    expect(switched.signingKeys).toEqual([
      { scheme: 'ed25519', publicKey: switched.publicKey },
      { scheme: 'hmac', expiresAt: new Date(T0 + 2 * HOUR).toISOString() },
    ]);
    clock.now = T0 + 2 * HOUR;
    expect(await signing()).toEqual([key]);
    // Switching to the scheme it has changes nothing.
    const same = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { signing: 'ed25519' });
    expect(same.publicKey).toBe(switched.publicKey);
    expect(await signing()).toEqual([key]);
  });

  it('ed25519 rotation: both public keys shown with the old one’s end, both sign, then only the new one', async () => {
    const { clock, deps, endpoint, signing } = await given();
    const first = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { signing: 'ed25519', graceHours: 0 });
    const rotated = await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: 24 });
    expect(rotated.secret).toBeUndefined();
    expect(rotated.endpoint.publicKey).not.toBe(first.publicKey);
    expect(rotated.endpoint.signingKeys).toEqual([
      { scheme: 'ed25519', publicKey: rotated.endpoint.publicKey },
      { scheme: 'ed25519', publicKey: first.publicKey, expiresAt: new Date(T0 + 24 * HOUR).toISOString() },
    ]);
    expect((await signing()).map(schemeOf)).toEqual(['ed25519', 'ed25519']);
    clock.now = T0 + 24 * HOUR;
    expect((await signing()).map(publicKeyOf)).toEqual([rotated.endpoint.publicKey]);
  });

  it('ed25519 → hmac answers the new whsec_ secret once; the ed25519 key keeps signing through the grace', async () => {
    const { clock, deps, endpoint, signing } = await given();
    const ed = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { signing: 'ed25519', graceHours: 0 });
    const back = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { signing: 'hmac', graceHours: 1 });
    expect(back.secret).toMatch(/^whsec_/);
    expect(back.signing).toBe('hmac');
    expect(back.publicKey).toBeUndefined();
    expect(back.signingKeys[1]).toEqual({ scheme: 'ed25519', publicKey: ed.publicKey, expiresAt: new Date(T0 + HOUR).toISOString() });
    expect(await signing()).toEqual([back.secret, expect.stringMatching(/^whsk_/)]);
    clock.now = T0 + HOUR;
    expect(await signing()).toEqual([back.secret]);
  });
});
