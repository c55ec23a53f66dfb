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
import { activeSecrets, getEndpoint, MAX_SIGNING_SECRETS, rotateSecret } from '../../../functions/core/delivery/endpoints.js';
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
