/**
 * The notices of an endpoint in trouble (functions/core/delivery/endpoint-notices.ts) on the
 * endpoints store's twin, an in-memory notices queue and a clock the test moves: one
 * `endpoint.paused` per pause however many containers fail it, one `endpoint.disabled` per
 * disable, and a queue that cannot take a notice never fails a delivery.
 */
import { describe, it, expect, jest } from '@jest/globals';
import { defaultConfig, type Config } from '../../../functions/core/platform/config.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import { retryLostRaces } from '../../../functions/core/platform/optimistic.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { admitAttempt, recordAttempt } from '../../../functions/core/delivery/circuit-store.js';
import { getEndpoint, recordEndpointHealth } from '../../../functions/core/delivery/endpoints.js';
import { noticeQueuePort } from '../../../functions/core/notify/produce.js';
import { failureOf } from '../../../functions/core/delivery/endpoint-notices.js';
import { composeNotice } from '../../../functions/core/notify/compose.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';
import { unqueuedNoticesPort } from '../../../functions/core/notify/unqueued-notices-store.js';
import { MemoryUnqueuedNotices } from '../../support/stores/memory-unqueued-notices.js';
import { MemoryNoticeQueue } from '../../support/memory-notice-queue.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from '../../integration/delivery-core/support/memory-delivery.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { keys } from '../../../functions/core/platform/model.js';

jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
jest.spyOn(logger, 'info').mockImplementation(() => undefined);
jest.spyOn(logger, 'error').mockImplementation(() => undefined);

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

async function given(settings: Partial<Config> = {}) {
  const clock = { now: T0 };
  const endpoints = new MemoryEndpointStore();
  const queue = new MemoryNoticeQueue();
  const config: Config = { ...defaultConfig, circuitFailureThreshold: 3, circuitOpenSeconds: 30, disableAfterFailingHours: 1, ...settings };
  const deliveries = new MemoryDeliveryStore(() => clock.now);
  // Two deliveries to the endpoint wait, one was delivered, one waits for another endpoint.
  for (const [n, endpointId, status] of [[1, 'ep_notices', 'pending'], [2, 'ep_notices', 'pending'], [3, 'ep_notices', 'delivered'], [4, 'ep_other', 'pending']] as const) {
    const item = { ...keys.delivery('org_notices', `dlv_${n}`), id: `dlv_${n}`, organizationId: 'org_notices', endpointId, status, attempts: [], createdAt: at(T0 - n * 1000) };
    deliveries.items.set(`${item.pk}\u0000${item.sk}`, item);
  }
  const ports = withDeliveryPorts(withEndpointStore({ now: () => clock.now, config, tables: {}, queues: {} } as unknown as Deps, endpoints), { store: deliveries, queue: new MemoryDeliveryQueue(() => clock.now) });
  const base = noticeQueuePort.with(ports, queue);
  const container = () => withContainerMemory(base, new ContainerMemory());
  const endpoint: WebhookEndpoint = {
    id: 'ep_notices', organizationId: 'org_notices', url: 'https://receiver.example.com/hook/cap_4f9a2c71e0?token=tk_77aa9911', events: ['*'], description: 'Zapier',
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', createdAt: at(T0) }], secretsVersion: 1, enabled: true, createdAt: at(T0), headers: {},
  };
  await retryLostRaces('given', () => endpoints.createEndpoint(endpoint, 10));
  const stored = async () => (await getEndpoint(base, endpoint.organizationId, endpoint.id))!;
  return { clock, queue, container, stored };
}

const failed = { ok: false, probe: false, latencyMs: 10, lastError: 'HTTP 500: Internal Server Error' };

describe('an endpoint that fails until its circuit opens', () => {
  it('produces one paused notice: which endpoint, since when, until when, the last error', async () => {
    const { clock, queue, container, stored } = await given();
    const [a, b] = [container(), container()];
    for (let i = 0; i < 3; i++) await recordAttempt(a, await stored(), failed);
    // Another container's late failure, with the circuit already open: the same pause.
    await recordAttempt(b, { ...(await stored()), circuit: { failures: 2, opens: 0 } }, failed);
    expect(queue.messages).toEqual([{
      organizationId: 'org_notices', kind: 'endpoint.paused', key: `endpoint.paused|org_notices|ep_notices|${at(T0)}`, at: at(T0),
      data: { endpointId: 'ep_notices', url: 'https://receiver.example.com', description: 'Zapier', since: at(T0), until: at(T0 + 30_000), lastError: 'HTTP 500: Internal Server Error', waiting: 2 },
    }]);
    // The probe fails: re-opened, still the same pause.
    clock.now = T0 + 31_000;
    const probe = await admitAttempt(a, await stored(), 'slow');
    expect(probe).toMatchObject({ kind: 'attempt', probe: true });
    if (probe.kind === 'attempt') probe.release();
    await recordAttempt(a, await stored(), { ...failed, probe: true });
    expect(queue.messages).toHaveLength(1);
  });

  it('counts the delivery whose failure paused it among those waiting, its record written yet or not, once', async () => {
    for (const [deliveryId, waiting] of [['dlv_unwritten', 3], ['dlv_1', 2]] as const) {
      const { queue, container, stored } = await given();
      const deps = container();
      for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ...failed, waiting: { organizationId: 'org_notices', deliveryId } });
      expect(queue.messages.map((m) => (m.data as { waiting?: number }).waiting)).toEqual([waiting]);
    }
  });

  it('produces a new paused notice for a new pause after the circuit closed', async () => {
    const { clock, queue, container, stored } = await given();
    const deps = container();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), failed);
    clock.now = T0 + 31_000;
    const probe = await admitAttempt(deps, await stored(), 'slow');
    if (probe.kind === 'attempt') probe.release();
    await recordAttempt(deps, await stored(), { ok: true, probe: true, latencyMs: 10 });
    clock.now = T0 + 60_000;
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), failed);
    expect(queue.messages.map((m) => m.key)).toEqual([`endpoint.paused|org_notices|ep_notices|${at(T0)}`, `endpoint.paused|org_notices|ep_notices|${at(T0 + 60_000)}`]);
  });

  it('still counts the failure and opens the circuit when the notices queue cannot take the notice, which is kept for the sweeper', async () => {
    const { queue, container, stored } = await given();
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    queue.failing = true;
    const unqueued = new MemoryUnqueuedNotices();
    const deps = unqueuedNoticesPort.with(container(), unqueued);
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), failed);
    expect((await stored()).circuit?.until).toBe(at(T0 + 30_000));
    expect(queue.messages).toEqual([]);
    expect([...unqueued.items.values()].flat().map((n) => n.kind)).toEqual(['endpoint.paused']);
  });
});

describe('an endpoint disabled', () => {
  it('after failing too long produces one disabled notice, however many deliveries fail after', async () => {
    const { clock, queue, container, stored } = await given();
    const deps = container();
    await recordEndpointHealth(deps, await stored(), 'failed', 'HTTP 502');
    clock.now = T0 + 3_700_000;
    const failing = await stored();
    await recordEndpointHealth(deps, failing, 'failed', 'HTTP 502');
    await recordEndpointHealth(container(), failing, 'failed', 'HTTP 502'); // another container, read before the disable
    expect(queue.messages).toEqual([expect.objectContaining({
      kind: 'endpoint.disabled', key: `endpoint.disabled|org_notices|ep_notices|${at(T0 + 3_700_000)}`,
      data: expect.objectContaining({ endpointId: 'ep_notices', reason: `failing without a success since ${at(T0)}`, lastError: 'HTTP 502' }),
    })]);
    expect((await stored()).enabled).toBe(false);
  });

  it('by a 410 Gone produces the disabled notice with its reason', async () => {
    const { queue, container, stored } = await given();
    await recordEndpointHealth(container(), await stored(), 'gone', 'HTTP 410');
    expect(queue.messages.map((m) => [m.kind, (m.data as { reason: string }).reason])).toEqual([['endpoint.disabled', `the receiver answered 410 Gone at ${at(T0)}`]]);
  });
});

describe('what an endpoint notice tells', () => {
  const endpoint = { secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', createdAt: at(T0) }], headers: { Authorization: 'Bearer tok_secret_0123456789' } };

  it("the last error as the attempt log keeps it: the endpoint's secrets redacted", () => {
    const said = failureOf({ ok: false, status: 401, error: 'bad token Bearer tok_secret_0123456789, key MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', errorCode: 'http_error' }, endpoint)!;
    expect(said).toMatch(/^HTTP 401: http_error: bad token/);
    expect(said).not.toContain('tok_secret_0123456789');
    expect(said).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(failureOf({ ok: true }, endpoint)).toBeUndefined();
  });

  it('the endpoint by its origin and description, never its full URL (a capability), in a notice and in the digest', () => {
    const capability = 'https://hooks.example.com/catch/123/abc?secret=s3cr3t_value';
    const links = { unsubscribe: 'https://crm.example/u', settings: 'https://crm.example/settings' };
    const paused = composeNotice({ organizationId: 'org_1', kind: 'endpoint.paused', key: 'k', at: at(T0), data: { endpointId: 'ep_1', url: capability, description: 'Zapier', since: at(T0) } }, { email: 'a@b.example' }, links);
    const digest = composeNotice({ organizationId: 'org_1', kind: 'daily_digest', key: 'd', at: at(T0), data: { day: '2030-01-15', leadsBySource: {}, endpoints: [{ endpointId: 'ep_1', url: capability, delivered: 1, failed: 0 }] } }, { email: 'a@b.example' }, links);
    for (const mail of [paused, digest]) {
      const all = `${mail.subject}\n${mail.text}\n${mail.html}`;
      expect(all).toContain('https://hooks.example.com');
      expect(all).not.toContain('/catch/123');
      expect(all).not.toContain('s3cr3t_value');
    }
    expect(paused.subject).toContain('Zapier');
    expect(digest.text).toContain('https://hooks.example.com (ep_1)');
  });
});
