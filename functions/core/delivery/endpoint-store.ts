/**
 * The endpoints table's store (docs/data-model.md "Endpoints"): the only module of the domain that
 * writes it, and the only one that imports the DynamoDB SDK for it. Its items, all under the
 * organization's partition:
 * - `ENDPOINT#<id>`: the endpoint (endpoints.ts decides what it holds), its health marks and its
 *   circuit (circuit-store.ts decides, circuit-breaker.ts computes);
 * - `THROTTLE#<id>`: its rate limit's lanes (delivery-throttle.ts);
 * - `SLOTS#ENDPOINTS`: the organization's endpoint count, the bound's condition;
 * - `BULK#HANDOFF`: until when the fan-out hands the organization's shares to the bulk queue
 *   (events/fanout.ts), with a TTL; read with the endpoints by the fan-out's one Query.
 * Each write is one named operation (one conditional UpdateItem or one transaction), never an
 * expression built by a caller. The fan-out's grant reads routing fields only (lib/topology.ts
 * readableFields): `listEndpoints(..., { routingOnly: true })` is that projection.
 *
 * `endpointStore(deps)` is what callers use: the DynamoDB store (or the one a test gave with
 * `withEndpointStore`) behind the container's cache of endpoint lists for delivery
 * (`deliveryEndpoints`), which every write through it invalidates.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { LostRace } from '../platform/optimistic.js';
import { cancellationReasons, isTransactionConflict, queryAll } from '../platform/dynamo-store.js';
import { endpointRoutingFields } from '../platform/bindings.js';
import { keys, type SigningSecret, type StoredCheck, type WebhookEndpoint } from '../platform/model.js';
import { circuitOf } from './circuit-breaker.js';
import { containerMemory } from './container-memory.js';

/** Which endpoint an operation is about. */
export type EndpointRef = Pick<WebhookEndpoint, 'organizationId' | 'id'>;

/** The fields an update may set (absent: unchanged). */
export interface EndpointFields { url?: string; events?: string[]; description?: string; enabled?: boolean; rateLimitPerSecond?: number }

/**
 * One update of an endpoint (updateEndpoint): fields set and removed, and custom header changes.
 * `headers`: `whole` for an endpoint stored without headers (written once, only if still absent);
 * else changes by name, conditional on the count of headers read (`count`), so their bound holds
 * whoever changes them meanwhile.
 */
export interface EndpointChange {
  set: EndpointFields;
  remove: ('description' | 'rateLimitPerSecond')[];
  headers?: { whole: Record<string, string> } | { changes: Record<string, string | null>; count: number };
  /** A re-enable: the health marks that disabled it go. */
  clearHealth?: boolean;
  /** A re-enable or a new URL: the circuit closes (the operator says the receiver is fixed). */
  closeCircuit?: boolean;
}

/** What the fan-out reads of an organization: its endpoints' routing fields, and until when it is handed off (epoch ms; 0: not). */
export interface FanOutView { endpoints: WebhookEndpoint[]; handOffUntil: number }

/** The outcome of a rate-limit lane's claim: taken, or refused with every lane's last admission (epoch ms). */
export type LaneClaim = { taken: true } | { taken: false; lanes: number[] };

/**
 * The endpoints table's operations. Lost races (a transaction conflict, the endpoint count made
 * meanwhile, headers changed since read, the secrets' version moved) throw LostRace: the caller
 * reads again (platform/optimistic.ts retryLostRaces). A throttled write throws as DynamoDB does.
 */
export interface EndpointStore {
  /** An organization's endpoints, strongly consistent; `routingOnly`: the fan-out's projection (no secrets, no headers, no circuit). */
  listEndpoints(organizationId: string, options?: { routingOnly?: boolean }): Promise<WebhookEndpoint[]>;
  /**
   * The fan-out's read, strongly consistent: the endpoints' routing fields and the hand-off marker,
   * in one Query (the marker sorts just before the endpoints: `sk BETWEEN` instead of `begins_with`).
   */
  fanOutRead(organizationId: string): Promise<FanOutView>;
  /**
   * Hands the organization off until `until` (epoch ms), unless a later `until` is stored; the
   * marker expires by TTL after it (readers compare `handOffUntil` with their clock, as TTL is late).
   */
  markHandOff(organizationId: string, until: number): Promise<void>;
  /** One endpoint, strongly consistent. */
  getEndpoint(organizationId: string, endpointId: string): Promise<WebhookEndpoint | undefined>;
  /** Puts a new endpoint and takes one of the organization's `max` slots, together; 'full' when none is left (nothing written). */
  createEndpoint(endpoint: WebhookEndpoint, max: number): Promise<'created' | 'full'>;
  /** Changes only what `change` names; the endpoint as stored after it, or 'missing' (an update never brings one back). */
  updateEndpoint(ref: EndpointRef, change: EndpointChange): Promise<WebhookEndpoint | 'missing'>;
  /** Deletes the endpoint and its throttle lanes and gives its slot back, together. */
  removeEndpoint(ref: EndpointRef): Promise<'removed' | 'missing'>;
  /** Replaces the signing secrets, conditional on the version read (`secretsVersion`, absent: 0); the endpoint after it. */
  rotateSecret(ref: EndpointRef, secrets: SigningSecret[], ifVersion: number): Promise<WebhookEndpoint | 'missing'>;
  /** Health: the first failure after a success (only if none is marked). */
  markFailing(ref: EndpointRef, since: string): Promise<void>;
  /** Health: a success after failures. */
  clearFailing(ref: EndpointRef): Promise<void>;
  /** Health: disabled, with why, only if it is enabled; whether this write disabled it (its notice is sent once). */
  disableEndpoint(ref: EndpointRef, reason: string): Promise<boolean>;
  /** Counts a failed attempt; the failures counted since the circuit last closed (undefined: no such endpoint). */
  countFailure(ref: EndpointRef): Promise<number | undefined>;
  /** Opens the circuit until `until`, only if it is closed (a late failure does not extend an open one). */
  openCircuit(ref: EndpointRef, until: string): Promise<boolean>;
  /** A failed probe: open again until `until`, its `opens`-th opening in a row. */
  reopenCircuit(ref: EndpointRef, until: string, opens: number): Promise<void>;
  /** Closed, counters cleared; `slowUntil`: still marked slow until then (else the slow mark goes too). */
  closeCircuit(ref: EndpointRef, slowUntil?: string): Promise<void>;
  /** Claims the half-open probe: only the claim that finds `until` still stored wins; it holds until `deadline`. */
  claimProbe(ref: EndpointRef, until: string, deadline: string): Promise<boolean>;
  /** Gives back a probe claimed at `deadline` (only that claim): half-open again from `until`. */
  releaseProbe(ref: EndpointRef, deadline: string, until: string): Promise<boolean>;
  /** Marks the endpoint slow until `slowUntil`, unless a mark later than `now` is stored. */
  markSlow(ref: EndpointRef, slowUntil: string, now: string): Promise<boolean>;
  /** Keeps a receiver check's result on the endpoint (the last one replaces the one before); false: no such endpoint. */
  recordCheck(ref: EndpointRef, check: StoredCheck): Promise<boolean>;
  /**
   * Takes lane `lane` of the endpoint's rate limit at `now` (epoch ms), only if that lane last
   * admitted `windowMs` or more ago; refused: the `lanes` lanes' last admissions (0: never).
   */
  claimThrottleLane(ref: EndpointRef, claim: { lane: number; lanes: number; now: number; windowMs: number }): Promise<LaneClaim>;
}

/** A stored endpoint item → the endpoint. */
export function toEndpoint(item: Record<string, unknown>): WebhookEndpoint {
  return {
    id: item.id as string,
    organizationId: item.organizationId as string,
    url: item.url as string,
    events: item.events as string[],
    secrets: (item.secrets as SigningSecret[]) ?? [],
    enabled: item.enabled as boolean,
    ...(item.description ? { description: item.description as string } : {}),
    createdAt: item.createdAt as string,
    ...(item.secretsVersion !== undefined ? { secretsVersion: Number(item.secretsVersion) } : {}),
    ...(item.failingSince ? { failingSince: item.failingSince as string } : {}),
    ...(item.disabledReason ? { disabledReason: item.disabledReason as string } : {}),
    ...(circuitOf(item) ? { circuit: circuitOf(item) } : {}),
    ...(item.headers ? { headers: item.headers as Record<string, string> } : {}),
    ...(item.rateLimitPerSecond !== undefined ? { rateLimitPerSecond: Number(item.rateLimitPerSecond) } : {}),
    ...(item.lastCheck ? { lastCheck: item.lastCheck as StoredCheck } : {}),
  };
}

/** The circuit's attributes on the endpoint item (circuit-breaker.ts circuitAttributes). */
export const CIRCUIT_ATTRIBUTES = ['circuitFailures', 'circuitOpens', 'circuitUntil', 'circuitProbing', 'circuitSlowUntil'] as const;
/** The health marks a re-enable clears. */
export const HEALTH_ATTRIBUTES = ['failingSince', 'disabledReason'] as const;

/** The sort keys the fan-out's Query spans: the marker, then every endpoint (`$` follows `#`). */
export const FAN_OUT_RANGE = [keys.handOff('').sk, `${keys.endpointPrefix.slice(0, -1)}$`] as const;

/** A Query's items of the fan-out's range → the view (an item of another kind the range may come to hold is left out). */
export function toFanOutView(items: Record<string, unknown>[]): FanOutView {
  const marker = items.find((i) => i.sk === keys.handOff('').sk);
  return {
    endpoints: items.filter((i) => String(i.sk).startsWith(keys.endpointPrefix)).map(toEndpoint),
    handOffUntil: Number(marker?.handOffUntil ?? 0),
  };
}

const isConditionFailure = (error: unknown) => error instanceof ConditionalCheckFailedException || (error as Error).name === 'ConditionalCheckFailedException';

/** The endpoints table on DynamoDB. */
export function dynamoEndpointStore(deps: Deps): EndpointStore {
  const table = () => deps.tables.endpoints;

  async function listEndpoints(organizationId: string, options: { routingOnly?: boolean } = {}): Promise<WebhookEndpoint[]> {
    const fields = endpointRoutingFields;
    const items = await queryAll(deps, {
      TableName: table(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':sk': keys.endpointPrefix },
      ConsistentRead: true,
      ...(options.routingOnly ? {
        Select: 'SPECIFIC_ATTRIBUTES' as const,
        ProjectionExpression: fields.map((_, i) => `#f${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(fields.map((f, i) => [`#f${i}`, f])),
      } : {}),
    });
    return items.map(toEndpoint);
  }

  /**
   * The organization's endpoint count, made from its endpoints the first time a write needs it (an
   * organization from before the count existed), or made again when it says 0 while an endpoint is
   * there to remove (an item written around this store). A consistent Query, then a put only if no
   * writer changed the count meanwhile; from then on every add and remove changes it in the same
   * transaction.
   */
  async function countEndpoints(organizationId: string, observed?: Record<string, unknown>): Promise<void> {
    const count = (await listEndpoints(organizationId)).length;
    await deps.doc.send(new PutCommand({
      TableName: table(),
      Item: { ...keys.endpointSlots(organizationId), entity: 'endpoint_slots', count },
      ConditionExpression: observed ? '#n = :observed' : 'attribute_not_exists(pk)',
      ...(observed ? { ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':observed': observed.count } } : {}),
    })).catch((error: Error) => { if (error.name !== 'ConditionalCheckFailedException') throw error; });
  }

  /** A conditional UpdateItem on the endpoint item; undefined when its condition failed. */
  async function update(ref: EndpointRef, input: { expression: string; condition: string; values?: Record<string, unknown> }) {
    try {
      return await deps.doc.send(new UpdateCommand({
        TableName: table(),
        Key: keys.endpoint(ref.organizationId, ref.id),
        UpdateExpression: input.expression,
        ConditionExpression: input.condition,
        ...(input.values ? { ExpressionAttributeValues: input.values } : {}),
        ReturnValues: 'UPDATED_NEW',
      }));
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  /**
   * A conditional UpdateItem that answers the endpoint as stored after it: 'missing' when the
   * endpoint is gone (an update never brings one back), a lost race (`what` changed since read)
   * when its condition failed on an item still there.
   */
  async function updateRead(ref: EndpointRef, input: Omit<NonNullable<UpdateCommand['input']>, 'TableName' | 'Key'>, what: string): Promise<WebhookEndpoint | 'missing'> {
    try {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        ...input, TableName: table(), Key: keys.endpoint(ref.organizationId, ref.id), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return toEndpoint(Attributes!);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (!error.Item) return 'missing';
      throw new LostRace(what);
    }
  }

  return {
    listEndpoints,

    async fanOutRead(organizationId) {
      const fields = endpointRoutingFields;
      return toFanOutView(await queryAll(deps, {
        TableName: table(),
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':from': FAN_OUT_RANGE[0], ':to': FAN_OUT_RANGE[1] },
        ConsistentRead: true,
        Select: 'SPECIFIC_ATTRIBUTES',
        ProjectionExpression: fields.map((_, i) => `#f${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(fields.map((f, i) => [`#f${i}`, f])),
      }));
    },

    async markHandOff(organizationId, until) {
      // The fan-out's grant allows these attributes alone (bindings.ts handOffMarkerFields) and no Put:
      // an UpdateItem, answering nothing.
      try {
        await deps.doc.send(new UpdateCommand({
          TableName: table(),
          Key: keys.handOff(organizationId),
          UpdateExpression: 'SET handOffUntil = :u, expiresAt = :e',
          ConditionExpression: 'attribute_not_exists(handOffUntil) OR handOffUntil < :u',
          ExpressionAttributeValues: { ':u': until, ':e': Math.ceil(until / 1000) },
        }));
      } catch (error) {
        if (!isConditionFailure(error)) throw error; // a later mark is stored: it stands
      }
    },

    async getEndpoint(organizationId, endpointId) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName: table(), Key: keys.endpoint(organizationId, endpointId), ConsistentRead: true }));
      return Item ? toEndpoint(Item) : undefined;
    },

    // The bound is the count's condition in the same transaction as the put: parallel adds can
    // never pass it together (a check-then-write could), and a refused add writes nothing.
    async createEndpoint(endpoint, max) {
      const { organizationId } = endpoint;
      try {
        await deps.doc.send(new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: table(), Key: keys.endpointSlots(organizationId),
                UpdateExpression: 'ADD #n :one', ConditionExpression: '#n < :max',
                ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':one': 1, ':max': max },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            { Put: { TableName: table(), Item: { ...keys.endpoint(organizationId, endpoint.id), entity: 'endpoint', ...endpoint }, ConditionExpression: 'attribute_not_exists(pk)' } },
          ],
        }));
        return 'created';
      } catch (error) {
        const reasons = cancellationReasons(error);
        if (!reasons) throw error;
        if (reasons[0]?.Code === 'ConditionalCheckFailed') {
          if (reasons[0].Item) return 'full';
          await countEndpoints(organizationId);
          throw new LostRace('endpoint count made');
        }
        if (isTransactionConflict(reasons)) throw new LostRace('endpoint count');
        throw error;
      }
    },

    async updateEndpoint(ref, change) {
      const sets: string[] = [];
      const removes = new Set<string>();
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = {};
      const conditions = ['attribute_exists(pk)'];
      const set = (attribute: string, value: unknown) => {
        names[`#${attribute}`] = attribute;
        values[`:${attribute}`] = value;
        sets.push(`#${attribute} = :${attribute}`);
      };
      const remove = (attribute: string) => { names[`#${attribute}`] = attribute; removes.add(`#${attribute}`); };
      for (const [attribute, value] of Object.entries(change.set)) if (value !== undefined) set(attribute, value);
      change.remove.forEach(remove);
      if (change.headers) {
        names['#headers'] = 'headers';
        if ('whole' in change.headers) {
          set('headers', change.headers.whole); // an endpoint from before headers: the whole map, once
          conditions.push('attribute_not_exists(#headers)');
        } else {
          // One name at a time (`headers.<name>`), so two admins adding different headers keep both.
          Object.entries(change.headers.changes).forEach(([name, value], i) => {
            names[`#h${i}`] = name;
            if (value === null) removes.add(`#headers.#h${i}`);
            else {
              values[`:h${i}`] = value;
              sets.push(`#headers.#h${i} = :h${i}`);
            }
          });
          values[':headerCount'] = change.headers.count;
          conditions.push('size(#headers) = :headerCount');
        }
      }
      if (change.clearHealth) HEALTH_ATTRIBUTES.forEach(remove);
      if (change.closeCircuit) CIRCUIT_ATTRIBUTES.forEach(remove);
      // Removed meanwhile: 'missing'. Otherwise a failed condition means its headers changed since read.
      return updateRead(ref, {
        UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removes.size ? `REMOVE ${[...removes].join(', ')}` : ''].join(' ').trim(),
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
      }, 'endpoint headers');
    },

    async removeEndpoint(ref) {
      const { organizationId, id } = ref;
      try {
        await deps.doc.send(new TransactWriteCommand({
          TransactItems: [
            { Delete: { TableName: table(), Key: keys.endpoint(organizationId, id), ConditionExpression: 'attribute_exists(pk)' } },
            { Delete: { TableName: table(), Key: keys.endpointThrottle(organizationId, id) } }, // its rate limit's lanes
            {
              Update: {
                TableName: table(), Key: keys.endpointSlots(organizationId),
                UpdateExpression: 'ADD #n :minus', ConditionExpression: '#n > :zero',
                ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
          ],
        }));
        return 'removed';
      } catch (error) {
        const reasons = cancellationReasons(error);
        if (!reasons) throw error;
        if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'missing';
        if (reasons[2]?.Code === 'ConditionalCheckFailed') {
          await countEndpoints(organizationId, reasons[2].Item ? unmarshall(reasons[2].Item) : undefined);
          throw new LostRace('endpoint count made');
        }
        if (isTransactionConflict(reasons)) throw new LostRace('endpoint count');
        throw error;
      }
    },

    rotateSecret: (ref, secrets, version) => updateRead(ref, {
      UpdateExpression: 'SET secrets = :s, secretsVersion = :next',
      ConditionExpression: version ? 'secretsVersion = :v' : 'attribute_exists(pk) AND attribute_not_exists(secretsVersion)',
      ExpressionAttributeValues: { ':s': secrets, ':next': version + 1, ...(version ? { ':v': version } : {}) },
    }, 'secret version'),

    async markFailing(ref, since) {
      await update(ref, { expression: 'SET failingSince = :now', condition: 'attribute_exists(pk) AND attribute_not_exists(failingSince)', values: { ':now': since } });
    },
    async clearFailing(ref) {
      await update(ref, { expression: 'REMOVE failingSince', condition: 'attribute_exists(pk)' });
    },
    async disableEndpoint(ref, reason) {
      return Boolean(await update(ref, { expression: 'SET enabled = :f, disabledReason = :r', condition: 'attribute_exists(pk) AND enabled = :t', values: { ':f': false, ':r': reason, ':t': true } }));
    },

    async countFailure(ref) {
      const counted = await update(ref, { expression: 'ADD circuitFailures :one', condition: 'attribute_exists(pk)', values: { ':one': 1 } });
      return counted && Number(counted.Attributes?.circuitFailures ?? 0);
    },
    async openCircuit(ref, until) {
      return Boolean(await update(ref, {
        expression: 'SET circuitUntil = :until, circuitOpens = :one',
        condition: 'attribute_exists(pk) AND attribute_not_exists(circuitUntil)',
        values: { ':until': until, ':one': 1 },
      }));
    },
    async reopenCircuit(ref, until, opens) {
      await update(ref, {
        expression: 'SET circuitUntil = :until, circuitOpens = :opens REMOVE circuitProbing',
        condition: 'attribute_exists(pk)',
        values: { ':until': until, ':opens': opens },
      });
    },
    async closeCircuit(ref, slowUntil) {
      await update(ref, {
        expression: `REMOVE circuitFailures, circuitUntil, circuitOpens, circuitProbing${slowUntil ? ' SET circuitSlowUntil = :s' : ', circuitSlowUntil'}`,
        condition: 'attribute_exists(pk)',
        ...(slowUntil ? { values: { ':s': slowUntil } } : {}),
      });
    },
    async claimProbe(ref, until, deadline) {
      return Boolean(await update(ref, {
        expression: 'SET circuitUntil = :deadline, circuitProbing = :t',
        condition: 'circuitUntil = :until',
        values: { ':deadline': deadline, ':t': true, ':until': until },
      }));
    },
    async releaseProbe(ref, deadline, until) {
      return Boolean(await update(ref, {
        expression: 'SET circuitUntil = :until REMOVE circuitProbing',
        condition: 'circuitUntil = :deadline AND circuitProbing = :t',
        values: { ':until': until, ':deadline': deadline, ':t': true },
      }));
    },
    async markSlow(ref, slowUntil, now) {
      return Boolean(await update(ref, {
        expression: 'SET circuitSlowUntil = :s',
        condition: 'attribute_exists(pk) AND (attribute_not_exists(circuitSlowUntil) OR circuitSlowUntil < :now)',
        values: { ':s': slowUntil, ':now': now },
      }));
    },
    async recordCheck(ref, check) {
      return Boolean(await update(ref, { expression: 'SET lastCheck = :c', condition: 'attribute_exists(pk)', values: { ':c': check } }));
    },

    async claimThrottleLane(ref, { lane, lanes, now, windowMs }) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName: table(),
          Key: keys.endpointThrottle(ref.organizationId, ref.id),
          UpdateExpression: 'SET #l = :now',
          ConditionExpression: 'attribute_not_exists(#l) OR #l <= :free',
          ExpressionAttributeNames: { '#l': `l${lane}` },
          ExpressionAttributeValues: { ':now': now, ':free': now - windowMs },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        return { taken: true };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const item = error.Item ? unmarshall(error.Item) : {};
        return { taken: false, lanes: Array.from({ length: lanes }, (_, i) => Number(item[`l${i}`] ?? 0)) };
      }
    },
  };
}

/** A symbol, so that deps copied with a spread keep their store. */
const port = Symbol('endpointStore');
type WithStore = Deps & { [port]?: EndpointStore };

/** `deps` whose endpoints live in `store` (the in-memory twin in tests) instead of DynamoDB. */
export const withEndpointStore = (deps: Deps, store: EndpointStore): Deps => ({ ...deps, [port]: store }) as WithStore;

/** The store's operations as callers get them: with the container's endpoint cache (below). */
export interface CachedEndpointStore extends EndpointStore {
  /**
   * An organization's endpoints for delivery, cached for endpointCacheTtlSeconds: a disable, a URL
   * change or a secret rotation reaches deliveries within that TTL (the old secret signs for 24 h
   * anyway); a write through this store drops the organization's entry at once. A list that lacks
   * `endpointId` (an endpoint added after it was read) is read again, so a new endpoint's first
   * deliveries never find it "removed".
   */
  deliveryEndpoints(organizationId: string, endpointId?: string): Promise<WebhookEndpoint[]>;
}

/** The names of the writes: each one drops its organization's cached list, whether it succeeded or not (it may have landed). */
const WRITES = [
  'createEndpoint', 'updateEndpoint', 'removeEndpoint', 'rotateSecret', 'markFailing', 'clearFailing', 'disableEndpoint',
  'countFailure', 'openCircuit', 'reopenCircuit', 'closeCircuit', 'claimProbe', 'releaseProbe', 'markSlow', 'recordCheck',
] as const satisfies readonly (keyof EndpointStore)[];

export function endpointStore(deps: Deps): CachedEndpointStore {
  const store = (deps as WithStore)[port] ?? dynamoEndpointStore(deps);
  const cache = containerMemory(deps).endpoints;
  const organizationOf = (first: unknown) => (first as { organizationId: string }).organizationId;
  const writes = Object.fromEntries(WRITES.map((name) => [name, async (...args: unknown[]) => {
    try {
      return await (store[name] as (...a: unknown[]) => Promise<unknown>)(...args);
    } finally {
      cache.delete(organizationOf(args[0]));
    }
  }])) as unknown as Pick<EndpointStore, (typeof WRITES)[number]>;
  return {
    listEndpoints: (organizationId, options) => store.listEndpoints(organizationId, options),
    fanOutRead: (organizationId) => store.fanOutRead(organizationId),
    markHandOff: (organizationId, until) => store.markHandOff(organizationId, until), // not an endpoint: the cached lists are unchanged
    getEndpoint: (organizationId, endpointId) => store.getEndpoint(organizationId, endpointId),
    claimThrottleLane: (ref, claim) => store.claimThrottleLane(ref, claim), // its own item: the cached endpoints are unchanged
    ...writes,
    async deliveryEndpoints(organizationId, endpointId) {
      const now = deps.now();
      const ttlMs = deps.config.endpointCacheTtlSeconds * 1000;
      const has = (list: WebhookEndpoint[]) => !endpointId || list.some((e) => e.id === endpointId);
      const read = () => cache.load(organizationId, deps.now(), ttlMs, () => store.listEndpoints(organizationId));
      const cached = cache.get(organizationId, now);
      if (cached && has(cached.value)) return cached.value;
      if (cached) cache.delete(organizationId); // lacks the endpoint (added since it was read): read again
      // Every read goes through the cache's load: a cold container's batch of messages for one
      // organization shares one, and a write made here drops a read under way.
      const value = await read();
      if (has(value)) return value;
      // A shared read that began before the endpoint was added: once more, afresh.
      cache.delete(organizationId);
      return read();
    },
  };
}
