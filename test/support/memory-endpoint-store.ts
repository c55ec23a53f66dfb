/**
 * The endpoints store (functions/core/delivery/endpoint-store.ts) in memory: the same items as the
 * DynamoDB store writes (the endpoint item with its circuit attributes, the throttle lanes, the
 * organization's endpoint count), the same conditions, read back through the same toEndpoint.
 * test/integration/stores/endpoint-store.contract.test.ts holds the two to one behaviour.
 *
 * Fault injection (`inject`): the next call(s) of an operation throw DynamoDB's throttling error,
 * find their condition failed (as if another writer had just changed the item), or lose a race
 * (LostRace, what a transaction conflict becomes).
 */
import { endpointRoutingFields } from '../../functions/core/platform/bindings.js';
import { keys, type StoredCheck, type WebhookEndpoint } from '../../functions/core/platform/model.js';
import { LostRace } from '../../functions/core/platform/optimistic.js';
import {
  CIRCUIT_ATTRIBUTES, FAN_OUT_RANGE, HEALTH_ATTRIBUTES, toEndpoint, toFanOutView, type EndpointRef, type EndpointStore, type FanOutView, type LaneClaim,
} from '../../functions/core/delivery/endpoint-store.js';

type Item = Record<string, unknown>;
/** A throttle (DynamoDB's ThrottlingException), a failed condition, a lost race (LostRace), or any error thrown as given. */
export type Fault = 'throttle' | 'condition' | 'lost-race' | Error;

const id = (k: { pk: string; sk: string }) => `${k.pk}\u0000${k.sk}`;
const copy = <T>(value: T): T => structuredClone(value);
const throttled = () => Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });

export class MemoryEndpointStore implements EndpointStore {
  readonly items = new Map<string, Item>();
  /** Operations called, in order (a test may count writes). */
  readonly calls: (keyof EndpointStore)[] = [];
  private readonly faults: { operation: keyof EndpointStore; fault: Fault; times: number }[] = [];

  /** The next `times` calls of `operation` meet `fault`. */
  inject(operation: keyof EndpointStore, fault: Fault, times = 1): this {
    this.faults.push({ operation, fault, times });
    return this;
  }

  /** The fault this call meets (a throttle or a lost race is thrown here; a failed condition is answered). */
  private enter(operation: keyof EndpointStore): 'condition' | undefined {
    this.calls.push(operation);
    const i = this.faults.findIndex((f) => f.operation === operation);
    if (i < 0) return undefined;
    const f = this.faults[i];
    if (--f.times <= 0) this.faults.splice(i, 1);
    if (f.fault instanceof Error) throw f.fault;
    if (f.fault === 'throttle') throw throttled();
    if (f.fault === 'lost-race') throw new LostRace(`${operation} (injected)`);
    return 'condition';
  }

  private endpointItem(ref: EndpointRef): Item | undefined {
    return this.items.get(id(keys.endpoint(ref.organizationId, ref.id)));
  }

  private endpointsOf(organizationId: string): Item[] {
    const { pk } = keys.org(organizationId);
    return [...this.items.values()].filter((i) => i.pk === pk && String(i.sk).startsWith(keys.endpointPrefix)).sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1)); // a Query's order: by sort key, bytewise
  }

  /** Applies `change` to the endpoint item if it exists and `condition` holds of it; the item after, or undefined. */
  private write(ref: EndpointRef, condition: (item: Item) => boolean, change: (item: Item) => void): Item | undefined {
    const item = this.endpointItem(ref);
    if (!item || !condition(item)) return undefined;
    change(item);
    return item;
  }

  async listEndpoints(organizationId: string, options: { routingOnly?: boolean } = {}): Promise<WebhookEndpoint[]> {
    this.enter('listEndpoints');
    return this.endpointsOf(organizationId).map((item) => toEndpoint(copy(options.routingOnly
      ? Object.fromEntries(endpointRoutingFields.filter((f) => f in item).map((f) => [f, item[f]]))
      : item)));
  }

  async fanOutRead(organizationId: string): Promise<FanOutView> {
    this.enter('fanOutRead');
    const { pk } = keys.org(organizationId);
    const [from, to] = FAN_OUT_RANGE;
    const items = [...this.items.values()].filter((i) => i.pk === pk && String(i.sk) >= from && String(i.sk) <= to).sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1));
    return toFanOutView(items.map((item) => copy(Object.fromEntries(endpointRoutingFields.filter((f) => f in item).map((f) => [f, item[f]])))));
  }

  async markHandOff(organizationId: string, until: number): Promise<void> {
    const fault = this.enter('markHandOff');
    const key = keys.handOff(organizationId);
    const item = this.items.get(id(key));
    if (fault || (item && Number(item.handOffUntil) >= until)) return; // a later mark is stored (as a failed condition is swallowed)
    this.items.set(id(key), { ...key, handOffUntil: until, expiresAt: Math.ceil(until / 1000) });
  }

  async getEndpoint(organizationId: string, endpointId: string): Promise<WebhookEndpoint | undefined> {
    this.enter('getEndpoint');
    const item = this.endpointItem({ organizationId, id: endpointId });
    return item && toEndpoint(copy(item));
  }

  async createEndpoint(endpoint: WebhookEndpoint, max: number): Promise<'created' | 'full'> {
    if (this.enter('createEndpoint')) throw new LostRace('endpoint count');
    const slotsKey = id(keys.endpointSlots(endpoint.organizationId));
    const slots = this.items.get(slotsKey);
    if (!slots) {
      // No count yet (an organization from before it): made from its endpoints, then the add reads again.
      this.items.set(slotsKey, { ...keys.endpointSlots(endpoint.organizationId), entity: 'endpoint_slots', count: this.endpointsOf(endpoint.organizationId).length });
      throw new LostRace('endpoint count made');
    }
    if (Number(slots.count) >= max) return 'full';
    const key = keys.endpoint(endpoint.organizationId, endpoint.id);
    if (this.items.has(id(key))) throw new Error('ConditionalCheckFailed: the endpoint exists');
    slots.count = Number(slots.count) + 1;
    this.items.set(id(key), copy({ ...key, entity: 'endpoint', ...endpoint }));
    return 'created';
  }

  async updateEndpoint(ref: EndpointRef, change: Parameters<EndpointStore['updateEndpoint']>[1]): Promise<WebhookEndpoint | 'missing'> {
    const fault = this.enter('updateEndpoint');
    const item = this.endpointItem(ref);
    if (!item) return 'missing';
    const headers = change.headers;
    const holds = !fault && (!headers || ('whole' in headers
      ? item.headers === undefined
      : item.headers !== undefined && Object.keys(item.headers as object).length === headers.count));
    if (!holds) throw new LostRace('endpoint headers');
    for (const [attribute, value] of Object.entries(change.set)) if (value !== undefined) item[attribute] = copy(value);
    for (const attribute of change.remove) delete item[attribute];
    if (headers && 'whole' in headers) item.headers = copy(headers.whole);
    else if (headers) {
      const next = { ...(item.headers as Record<string, string>) };
      for (const [name, value] of Object.entries(headers.changes)) {
        if (value === null) delete next[name];
        else next[name] = value;
      }
      item.headers = next;
    }
    if (change.clearHealth) HEALTH_ATTRIBUTES.forEach((a) => delete item[a]);
    if (change.closeCircuit) CIRCUIT_ATTRIBUTES.forEach((a) => delete item[a]);
    return toEndpoint(copy(item));
  }

  async removeEndpoint(ref: EndpointRef): Promise<'removed' | 'missing'> {
    if (this.enter('removeEndpoint')) throw new LostRace('endpoint count');
    const key = id(keys.endpoint(ref.organizationId, ref.id));
    if (!this.items.has(key)) return 'missing';
    const slots = this.items.get(id(keys.endpointSlots(ref.organizationId)));
    if (!slots || Number(slots.count) <= 0) {
      // The count says 0 while an endpoint is there (written around the store): made again, then read again.
      this.items.set(id(keys.endpointSlots(ref.organizationId)), { ...keys.endpointSlots(ref.organizationId), entity: 'endpoint_slots', count: this.endpointsOf(ref.organizationId).length });
      throw new LostRace('endpoint count made');
    }
    this.items.delete(key);
    this.items.delete(id(keys.endpointThrottle(ref.organizationId, ref.id)));
    slots.count = Number(slots.count) - 1;
    return 'removed';
  }

  async rotateSecret(ref: EndpointRef, secrets: WebhookEndpoint['secrets'], ifVersion: number): Promise<WebhookEndpoint | 'missing'> {
    const fault = this.enter('rotateSecret');
    const item = this.endpointItem(ref);
    if (!item) return 'missing';
    if (fault || Number(item.secretsVersion ?? 0) !== ifVersion) throw new LostRace('secret version');
    item.secrets = copy(secrets);
    item.secretsVersion = ifVersion + 1;
    return toEndpoint(copy(item));
  }

  async markFailing(ref: EndpointRef, since: string): Promise<void> {
    const fault = this.enter('markFailing');
    this.write(ref, (i) => !fault && i.failingSince === undefined, (i) => { i.failingSince = since; });
  }

  async clearFailing(ref: EndpointRef): Promise<void> {
    const fault = this.enter('clearFailing');
    this.write(ref, () => !fault, (i) => { delete i.failingSince; });
  }

  async disableEndpoint(ref: EndpointRef, reason: string): Promise<boolean> {
    const fault = this.enter('disableEndpoint');
    return Boolean(this.write(ref, (i) => !fault && i.enabled === true, (i) => { i.enabled = false; i.disabledReason = reason; }));
  }

  async countFailure(ref: EndpointRef): Promise<number | undefined> {
    const fault = this.enter('countFailure');
    const item = this.write(ref, () => !fault, (i) => { i.circuitFailures = Number(i.circuitFailures ?? 0) + 1; });
    return item && Number(item.circuitFailures);
  }

  async openCircuit(ref: EndpointRef, until: string): Promise<boolean> {
    const fault = this.enter('openCircuit');
    return Boolean(this.write(ref, (i) => !fault && i.circuitUntil === undefined, (i) => { i.circuitUntil = until; i.circuitOpens = 1; }));
  }

  async reopenCircuit(ref: EndpointRef, until: string, opens: number): Promise<void> {
    const fault = this.enter('reopenCircuit');
    this.write(ref, () => !fault, (i) => { i.circuitUntil = until; i.circuitOpens = opens; delete i.circuitProbing; });
  }

  async closeCircuit(ref: EndpointRef, slowUntil?: string): Promise<void> {
    const fault = this.enter('closeCircuit');
    this.write(ref, () => !fault, (i) => {
      for (const a of ['circuitFailures', 'circuitUntil', 'circuitOpens', 'circuitProbing']) delete i[a];
      if (slowUntil) i.circuitSlowUntil = slowUntil;
      else delete i.circuitSlowUntil;
    });
  }

  async claimProbe(ref: EndpointRef, until: string, deadline: string): Promise<boolean> {
    const fault = this.enter('claimProbe');
    return Boolean(this.write(ref, (i) => !fault && i.circuitUntil === until, (i) => { i.circuitUntil = deadline; i.circuitProbing = true; }));
  }

  async releaseProbe(ref: EndpointRef, deadline: string, until: string): Promise<boolean> {
    const fault = this.enter('releaseProbe');
    return Boolean(this.write(ref, (i) => !fault && i.circuitUntil === deadline && i.circuitProbing === true, (i) => { i.circuitUntil = until; delete i.circuitProbing; }));
  }

  async markSlow(ref: EndpointRef, slowUntil: string, now: string): Promise<boolean> {
    const fault = this.enter('markSlow');
    return Boolean(this.write(ref, (i) => !fault && (i.circuitSlowUntil === undefined || String(i.circuitSlowUntil) < now), (i) => { i.circuitSlowUntil = slowUntil; }));
  }

  async recordCheck(ref: EndpointRef, check: StoredCheck): Promise<boolean> {
    const fault = this.enter('recordCheck');
    return Boolean(this.write(ref, () => !fault, (i) => { i.lastCheck = copy(check); }));
  }

  async claimThrottleLane(ref: EndpointRef, claim: { lane: number; lanes: number; now: number; windowMs: number }): Promise<LaneClaim> {
    const fault = this.enter('claimThrottleLane');
    const key = keys.endpointThrottle(ref.organizationId, ref.id);
    const item = this.items.get(id(key)) ?? { ...key };
    const last = item[`l${claim.lane}`];
    if (fault || (last !== undefined && Number(last) > claim.now - claim.windowMs)) {
      return { taken: false, lanes: Array.from({ length: claim.lanes }, (_, i) => Number(item[`l${i}`] ?? 0)) };
    }
    item[`l${claim.lane}`] = claim.now;
    this.items.set(id(key), item);
    return { taken: true };
  }
}
