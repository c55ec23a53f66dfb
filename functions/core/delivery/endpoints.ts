/**
 * Webhook endpoints of an organization (docs/webhooks.md): up to 10, each with a URL, its subscribed
 * events, a signing secret shown once, an enabled flag and a description. Stored in the
 * organizations table under the organization's partition.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { cancellationReasons, isTransactionConflict, LostRace, retryLostRaces } from '../platform/optimistic.js';
import { queryAll } from '../platform/query.js';
import { TtlCache } from '../platform/ttl-cache.js';
import { endpointRoutingFields } from '../platform/bindings.js';
import { keys, type CircuitState, type SigningSecret, type WebhookEndpoint } from '../platform/model.js';
import { circuitOf, circuitView } from './circuit-breaker.js';
import { parseSubscription } from './subscriptions.js';
import { newSigningSecret } from './signing.js';
import { requireOrganization } from '../tenancy/organizations.js';
import { applyHeaderChanges, maskedHeaders, requireHeadersAgain, validateOptions, validateUrl, type HeaderChanges } from './endpoint-fields.js';

/**
 * What an endpoint shows its owner: never its secrets, its custom headers by name with masked
 * values (endpoint-fields.ts); its circuit as a state (docs/architecture.md#fair-delivery).
 */
export type EndpointSummary = Omit<WebhookEndpoint, 'secrets' | 'circuit' | 'secretsVersion' | 'headers'> & {
  secretCount: number; headers: Record<string, string>; circuit: { state: CircuitState; until?: string; slowLane?: true };
};

const summary = ({ secrets, circuit, secretsVersion: _v, headers, ...rest }: WebhookEndpoint, now: number): EndpointSummary =>
  ({ ...rest, secretCount: secrets.length, headers: maskedHeaders(headers), circuit: circuitView(circuit, now) });

/** The options a new endpoint or an update may set, validated (a 422 names the bad header). */
export interface EndpointOptions { headers?: HeaderChanges; rateLimitPerSecond?: number | null }

function toEndpoint(item: Record<string, unknown>): WebhookEndpoint {
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
  };
}

/** `routingOnly`: the endpoints' routing fields alone (no secrets), as the fan-out's grant requires. */
async function queryEndpoints(deps: Deps, organizationId: string, routingOnly = false): Promise<WebhookEndpoint[]> {
  const fields = endpointRoutingFields;
  const items = await queryAll(deps, {
    TableName: deps.tables.endpoints,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':sk': keys.endpointPrefix },
    ConsistentRead: true,
    ...(routingOnly ? {
      Select: 'SPECIFIC_ATTRIBUTES' as const,
      ProjectionExpression: fields.map((_, i) => `#f${i}`).join(', '),
      ExpressionAttributeNames: Object.fromEntries(fields.map((f, i) => [`#f${i}`, f])),
    } : {}),
  });
  return items.map(toEndpoint);
}

/** Signing secrets an endpoint may hold at once (the newest and those in a grace): each signs every delivery. */
export const MAX_SIGNING_SECRETS = 5;

const tooManyEndpoints = (max: number) => validationFailed([{ field: 'url', message: `an organization has at most ${max} endpoints; remove one first` }]);

/**
 * The organization's endpoint count, made from its endpoints the first time a write needs it (an
 * organization from before the count existed), or made again when it says 0 while an endpoint is
 * there to remove (an item written around this module). A consistent Query, then a put only if no
 * writer changed the count meanwhile; from then on every add and remove changes it in the same
 * transaction.
 */
async function countEndpoints(deps: Deps, organizationId: string, observed?: Record<string, unknown>): Promise<void> {
  const count = (await queryEndpoints(deps, organizationId)).length;
  await deps.doc.send(new PutCommand({
    TableName: deps.tables.endpoints,
    Item: { ...keys.endpointSlots(organizationId), entity: 'endpoint_slots', count },
    ConditionExpression: observed ? '#n = :observed' : 'attribute_not_exists(pk)',
    ...(observed ? { ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':observed': observed.count } } : {}),
  })).catch((error: Error) => { if (error.name !== 'ConditionalCheckFailedException') throw error; });
}

export async function addEndpoint(deps: Deps, organizationId: string, input: { url: string; events: string | string[]; description?: string; enabled?: boolean } & EndpointOptions) {
  await requireOrganization(deps, organizationId);
  const url = validateUrl(deps, input.url);
  const events = parseSubscription(input.events);
  if (input.description && input.description.length > 500) throw validationFailed([{ field: 'description', message: 'must be at most 500 characters' }]);
  const options = validateOptions(input);
  const headers = applyHeaderChanges({}, options.headers);
  const rate = options.rate ?? null;
  const max = deps.config.maxEndpointsPerOrganization;
  const secret = newSigningSecret();
  const now = new Date(deps.now()).toISOString();
  const endpoint: WebhookEndpoint = {
    id: newId('ep'), organizationId, url, events, secrets: [{ secret, createdAt: now }], secretsVersion: 1, enabled: input.enabled ?? true,
    ...(input.description ? { description: input.description } : {}), createdAt: now,
    headers, ...(rate !== null ? { rateLimitPerSecond: rate } : {}),
  };
  // The bound is the count's condition in the same transaction as the put: parallel adds can
  // never pass it together (a check-then-write could), and a refused add writes nothing.
  await retryLostRaces('The organization\'s endpoints', async () => {
    try {
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: deps.tables.endpoints, Key: keys.endpointSlots(organizationId),
              UpdateExpression: 'ADD #n :one', ConditionExpression: '#n < :max',
              ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':one': 1, ':max': max },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
          { Put: { TableName: deps.tables.endpoints, Item: { ...keys.endpoint(organizationId, endpoint.id), entity: 'endpoint', ...endpoint }, ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }));
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0]?.Code === 'ConditionalCheckFailed') {
        if (reasons[0].Item) throw tooManyEndpoints(max);
        await countEndpoints(deps, organizationId);
        throw new LostRace('endpoint count made');
      }
      if (isTransactionConflict(reasons)) throw new LostRace('endpoint count');
      throw error;
    }
  });
  endpointCache.delete(organizationId);
  return { endpoint: summary(endpoint, deps.now()), secret };
}

export async function listEndpoints(deps: Deps, organizationId: string): Promise<EndpointSummary[]> {
  await requireOrganization(deps, organizationId);
  return (await queryEndpoints(deps, organizationId)).map((e) => summary(e, deps.now()));
}

export async function getEndpoint(deps: Deps, organizationId: string, endpointId: string): Promise<WebhookEndpoint | undefined> {
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.endpoints, Key: keys.endpoint(organizationId, endpointId), ConsistentRead: true }));
  return Item ? toEndpoint(Item) : undefined;
}

export async function requireEndpoint(deps: Deps, organizationId: string, endpointId: string): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(deps, organizationId, endpointId);
  if (!endpoint) throw notFound(`No endpoint ${endpointId} in organization ${organizationId}.`);
  return endpoint;
}

/** The circuit's attributes on the endpoint item (circuit-breaker.ts circuitAttributes). */
const CIRCUIT_ATTRIBUTES = ['circuitFailures', 'circuitOpens', 'circuitUntil', 'circuitProbing', 'circuitSlowUntil'];

/**
 * Changes only the attributes asked for, with one UpdateItem: never the whole item read earlier,
 * so a rotation, a health mark or a circuit change made meanwhile is kept (the secrets are never
 * written here). Custom headers change one name at a time (`headers.<name>`), so two admins adding
 * different headers keep both; the write is conditional on the count of headers read, so their
 * bound holds however many change them at once (a lost race reads again, bounded, then 409).
 * Answers the endpoint as stored after the update.
 */
export async function updateEndpoint(
  deps: Deps, organizationId: string, endpointId: string,
  input: { url?: string; events?: string | string[]; description?: string; enabled?: boolean } & EndpointOptions,
) {
  const { headers: headerChanges, rate } = validateOptions(input);
  const updated = await retryLostRaces('The endpoint\'s headers', async () => {
    const current = await requireEndpoint(deps, organizationId, endpointId);
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
    if (input.url !== undefined) {
      set('url', validateUrl(deps, input.url));
      requireHeadersAgain(current, values[':url'] as string, headerChanges);
    }
    if (input.events !== undefined) set('events', parseSubscription(input.events));
    if (input.description !== undefined) {
      if (input.description.length > 500) throw validationFailed([{ field: 'description', message: 'must be at most 500 characters' }]);
      if (input.description) set('description', input.description);
      else remove('description');
    }
    if (input.enabled !== undefined) set('enabled', input.enabled);
    if (rate === null) remove('rateLimitPerSecond');
    else if (rate !== undefined) set('rateLimitPerSecond', rate);
    if (Object.keys(headerChanges).length) {
      const next = applyHeaderChanges(current.headers ?? {}, headerChanges); // a 422 past the bound
      names['#headers'] = 'headers';
      if (!current.headers) {
        set('headers', next); // an endpoint from before headers: the whole map, once
        conditions.push('attribute_not_exists(#headers)');
      } else {
        Object.entries(headerChanges).forEach(([name, value], i) => {
          if (value === null && !(name in current.headers!)) return; // nothing to remove (an unused name is an error to DynamoDB)
          names[`#h${i}`] = name;
          if (value === null) removes.add(`#headers.#h${i}`);
          else {
            values[`:h${i}`] = value;
            sets.push(`#headers.#h${i} = :h${i}`);
          }
        });
        values[':headerCount'] = Object.keys(current.headers).length;
        conditions.push('size(#headers) = :headerCount');
      }
    }
    // Re-enabling clears the health state that disabled it; a new URL or a re-enable also closes the
    // circuit (the operator says the receiver is fixed: the next delivery tries it at once).
    if (input.enabled === true) ['failingSince', 'disabledReason'].forEach(remove);
    if (input.enabled === true || (values[':url'] !== undefined && values[':url'] !== current.url)) CIRCUIT_ATTRIBUTES.forEach(remove);
    if (sets.length === 0 && removes.size === 0) return current;
    try {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName: deps.tables.endpoints,
        Key: keys.endpoint(organizationId, endpointId),
        UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removes.size ? `REMOVE ${[...removes].join(', ')}` : ''].join(' ').trim(),
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return toEndpoint(Attributes!);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Removed meanwhile: an update never brings an endpoint back. Otherwise its headers changed since read.
      if (!error.Item) throw notFound(`No endpoint ${endpointId} in organization ${organizationId}.`);
      throw new LostRace('endpoint headers');
    }
  });
  endpointCache.delete(organizationId);
  return summary(updated, deps.now());
}

/** Removes the endpoint and gives its slot back (the count), in one transaction. */
export async function removeEndpoint(deps: Deps, organizationId: string, endpointId: string): Promise<EndpointSummary> {
  const current = await requireEndpoint(deps, organizationId, endpointId);
  await retryLostRaces('The organization\'s endpoints', async () => {
    try {
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          { Delete: { TableName: deps.tables.endpoints, Key: keys.endpoint(organizationId, endpointId), ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { TableName: deps.tables.endpoints, Key: keys.endpointThrottle(organizationId, endpointId) } }, // its rate limit's lanes
          {
            Update: {
              TableName: deps.tables.endpoints, Key: keys.endpointSlots(organizationId),
              UpdateExpression: 'ADD #n :minus', ConditionExpression: '#n > :zero',
              ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
        ],
      }));
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0]?.Code === 'ConditionalCheckFailed') throw notFound(`No endpoint ${endpointId} in organization ${organizationId}.`);
      if (reasons[2]?.Code === 'ConditionalCheckFailed') {
        await countEndpoints(deps, organizationId, reasons[2].Item ? unmarshall(reasons[2].Item) : undefined);
        throw new LostRace('endpoint count made');
      }
      if (isTransactionConflict(reasons)) throw new LostRace('endpoint count');
      throw error;
    }
  });
  endpointCache.delete(organizationId);
  return summary(current, deps.now());
}

/**
 * A new secret; the previous ones keep signing for `graceHours` (default 24), so receivers can
 * switch. At most MAX_SIGNING_SECRETS signing at once: a rotation with a grace past it is a 422.
 * The secret list carries a version (`secretsVersion`): the write is conditional on the version
 * read, so two rotations never both answer a secret of which one is then overwritten; the loser
 * reads again and rotates on top (bounded, then 409). The answered secret is the stored one.
 */
export async function rotateSecret(deps: Deps, organizationId: string, endpointId: string, options: { graceHours?: number } = {}) {
  const grace = options.graceHours ?? 24;
  if (!Number.isFinite(grace) || grace < 0) throw validationFailed([{ field: 'grace', message: 'must be zero or more hours' }]);
  const { endpoint, secret } = await retryLostRaces('The endpoint\'s signing secrets', async () => {
    const current = await requireEndpoint(deps, organizationId, endpointId);
    const now = deps.now();
    // Each rotation with a grace keeps the older secrets signing: bounded, or repeated rotations grow every delivery's signature header.
    if (grace > 0 && activeSecrets(current, now).length >= MAX_SIGNING_SECRETS) {
      throw validationFailed([{ field: 'grace_hours', message: `the endpoint already has ${MAX_SIGNING_SECRETS} secrets signing; rotate with grace_hours 0 or wait for a grace to end` }]);
    }
    const until = new Date(now + grace * 3_600_000).toISOString();
    const kept = current.secrets
      .filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now)
      .map((s) => ({ ...s, expiresAt: s.expiresAt && s.expiresAt < until ? s.expiresAt : until }))
      .filter(() => grace > 0);
    const secret = newSigningSecret();
    const secrets = [{ secret, createdAt: new Date(now).toISOString() }, ...kept];
    const version = current.secretsVersion ?? 0;
    try {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName: deps.tables.endpoints,
        Key: keys.endpoint(organizationId, endpointId),
        UpdateExpression: 'SET secrets = :s, secretsVersion = :next',
        ConditionExpression: version ? 'secretsVersion = :v' : 'attribute_exists(pk) AND attribute_not_exists(secretsVersion)',
        ExpressionAttributeValues: { ':s': secrets, ':next': version + 1, ...(version ? { ':v': version } : {}) },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return { endpoint: toEndpoint(Attributes!), secret };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (!error.Item) throw notFound(`No endpoint ${endpointId} in organization ${organizationId}.`);
      throw new LostRace('secret version');
    }
  });
  endpointCache.delete(organizationId);
  return { endpoint: summary(endpoint, deps.now()), secret };
}

/** The secrets that sign right now: the newest first, then any still inside their rotation grace. */
export const activeSecrets = (endpoint: WebhookEndpoint, now: number): string[] =>
  endpoint.secrets.filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now).map((s) => s.secret);

/** Records a failing streak and disables the endpoint once it has failed for too long; clears it on success. */
export async function recordEndpointHealth(deps: Deps, endpoint: WebhookEndpoint, outcome: 'ok' | 'failed' | 'gone'): Promise<void> {
  const key = keys.endpoint(endpoint.organizationId, endpoint.id);
  const now = new Date(deps.now()).toISOString();
  const update = (expression: string, values?: Record<string, unknown>, condition = 'attribute_exists(pk)') =>
    deps.doc.send(new UpdateCommand({ TableName: deps.tables.endpoints, Key: key, UpdateExpression: expression, ConditionExpression: condition, ...(values ? { ExpressionAttributeValues: values } : {}) }))
      .catch((error: Error) => { if (error.name !== 'ConditionalCheckFailedException') throw error; });
  if (outcome === 'ok') {
    if (endpoint.failingSince) await update('REMOVE failingSince');
  } else if (outcome === 'gone') {
    await update('SET enabled = :f, disabledReason = :r', { ':f': false, ':r': `the receiver answered 410 Gone at ${now}` });
  } else if (!endpoint.failingSince) {
    await update('SET failingSince = :now', { ':now': now }, 'attribute_exists(pk) AND attribute_not_exists(failingSince)');
  } else if (deps.now() - Date.parse(endpoint.failingSince) > deps.config.disableAfterFailingHours * 3_600_000) {
    await update('SET enabled = :f, disabledReason = :r', { ':f': false, ':r': `failing without a success since ${endpoint.failingSince}` });
  }
  if (outcome !== 'ok' || endpoint.failingSince) endpointCache.delete(endpoint.organizationId);
}

/**
 * An organization's endpoints as stored now (a consistent read). The fan-out reads them this way,
 * once per organization per stream batch, so an endpoint hears of every change written after it
 * was added, whatever the cache below holds. Routing fields only (`secrets` empty, circuit absent):
 * the fan-out's grant cannot read more (docs/decisions.md, "Endpoints in their own table").
 */
export const currentEndpoints = (deps: Deps, organizationId: string): Promise<WebhookEndpoint[]> => queryEndpoints(deps, organizationId, true);

/**
 * An organization's endpoints for delivery, cached for endpointCacheTtlSeconds: a disable, a URL
 * change or a secret rotation reaches deliveries within that TTL (the old secret signs for 24 h
 * anyway). A list that lacks `endpointId` (an endpoint added after it was read) is read again, so
 * a new endpoint's first deliveries never find it "removed".
 */
const endpointCache = new TtlCache<string, WebhookEndpoint[]>(10_000);
/** Drops an organization's cached endpoints: the next delivery reads them again (after this container changed them). */
export const forgetEndpoints = (organizationId: string) => endpointCache.delete(organizationId);
/** Drops every cached endpoint list: what a fresh process starts with (the delivery core's restart in tests). */
export const forgetAllEndpoints = () => endpointCache.clear();
export async function endpointsOf(deps: Deps, organizationId: string, endpointId?: string): Promise<WebhookEndpoint[]> {
  const now = deps.now();
  const ttlMs = deps.config.endpointCacheTtlSeconds * 1000;
  const has = (list: WebhookEndpoint[]) => !endpointId || list.some((e) => e.id === endpointId);
  const read = () => endpointCache.load(organizationId, deps.now(), ttlMs, () => queryEndpoints(deps, organizationId));
  const cached = endpointCache.get(organizationId, now);
  if (cached && has(cached.value)) return cached.value;
  if (cached) endpointCache.delete(organizationId); // lacks the endpoint (added since it was read): read again
  // Every read goes through the cache's load: a cold container's batch of messages for one
  // organization shares one, and a forget (a change made here) drops a read under way.
  const value = await read();
  if (has(value)) return value;
  // A shared read that began before the endpoint was added: once more, afresh.
  endpointCache.delete(organizationId);
  return read();
}
