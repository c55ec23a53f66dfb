/**
 * Checks each line of a `crm tables import` file before anything is written (docs/operations.md
 * "Restore"): an import writes items no API call could have written otherwise, so each is held to
 * the rules the API keeps when it writes one. A line is an item in DynamoDB's JSON whose keys are
 * those of its table, at most 400 KB as DynamoDB counts it, whose organization attributes name the
 * organization of its key; an endpoint's URL passes the API's URL rules (scheme, no credentials,
 * the SSRF guard's blocked ranges for an address) and its custom headers the header rules
 * (delivery/endpoint-fields.ts). Any line, whatever it holds (`null`, an array, broken JSON),
 * yields a reason, never a TypeError.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { tables, type TableName } from '../topology.js';
import { keys } from '../../functions/core/platform/model.js';
import type { Deps } from '../../functions/core/platform/deps.js';
import { sendableHeaders, validateUrl } from '../../functions/core/delivery/endpoint-fields.js';
import { DomainError } from '../../functions/core/platform/errors.js';

export type Item = Record<string, AttributeValue>;
export type Checked = { ok: true; to: TableName; item: Item } | { ok: false; reason: string };

/** DynamoDB's item size limit. */
export const MAX_ITEM_BYTES = 400 * 1024;

const TYPES = ['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL'] as const;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why `value` is not an attribute value in DynamoDB's JSON, or undefined when it is one. */
function attributeProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at} is not an attribute value ({"S": …}, {"N": …}, …)`;
  const tags = Object.keys(value);
  if (tags.length !== 1 || !(TYPES as readonly string[]).includes(tags[0])) return `${at} must have exactly one type of ${TYPES.join(', ')}`;
  const [tag] = tags;
  const inner = value[tag];
  const strings = (v: unknown) => Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string');
  switch (tag) {
    case 'S': case 'B': return typeof inner === 'string' ? undefined : `${at}.${tag} must be a string`;
    case 'N': return typeof inner === 'string' && inner.trim() !== '' && Number.isFinite(Number(inner)) ? undefined : `${at}.N must be a number written as a string`;
    case 'SS': case 'BS': return strings(inner) ? undefined : `${at}.${tag} must be a non-empty list of strings`;
    case 'NS': return strings(inner) && (inner as string[]).every((n) => Number.isFinite(Number(n))) ? undefined : `${at}.NS must be a non-empty list of numbers written as strings`;
    case 'NULL': return inner === true ? undefined : `${at}.NULL must be true`;
    case 'BOOL': return typeof inner === 'boolean' ? undefined : `${at}.BOOL must be true or false`;
    case 'L': return Array.isArray(inner) ? inner.map((v, i) => attributeProblem(v, `${at}[${i}]`)).find(Boolean) : `${at}.L must be a list`;
    default: return isRecord(inner) ? Object.entries(inner).map(([k, v]) => attributeProblem(v, `${at}.${k}`)).find(Boolean) : `${at}.M must be a map`;
  }
}

/** An attribute value's size as DynamoDB counts it (docs: "Item sizes and formats"). */
function sizeOf(value: AttributeValue): number {
  const v = value as unknown as Record<string, unknown>;
  if (v.S !== undefined) return Buffer.byteLength(v.S as string);
  if (v.N !== undefined) return Math.ceil(String(v.N).replace(/^[-+]?0*|\.|e.*$/gi, '').length / 2) + 1;
  if (v.B !== undefined) return Buffer.from(v.B as string, 'base64').length;
  if (v.SS !== undefined) return (v.SS as string[]).reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (v.NS !== undefined) return (v.NS as string[]).reduce((n, s) => n + sizeOf({ N: s }), 0);
  if (v.BS !== undefined) return (v.BS as string[]).reduce((n, s) => n + Buffer.from(s, 'base64').length, 0);
  if (v.L !== undefined) return 3 + (v.L as AttributeValue[]).reduce((n, e) => n + 1 + sizeOf(e), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M as Item).reduce((n, [k, e]) => n + 1 + Buffer.byteLength(k) + sizeOf(e), 0);
  return 1;
}

export const itemBytes = (item: Item): number => Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + sizeOf(v), 0);

/**
 * The table an exported item goes to. Exports from before the endpoints table had the webhook
 * endpoints (and their bound) in the organizations table: they go to their own table here.
 */
export function destination(from: TableName, item: Item): TableName {
  const sk = item.sk?.S;
  if (from === 'organizations' && sk !== undefined && (sk.startsWith(keys.endpointPrefix) || sk === keys.endpointSlots('').sk)) return 'endpoints';
  return from;
}

const ORGANIZATION_ATTRIBUTES = ['organization_id', 'organizationId'];
/** Sort-key prefixes whose suffix is the item's own `id`. */
const ID_PREFIXES = ['CLIENT#', 'WORK_ORDER#', 'INVOICE#', 'BOOKING#', keys.endpointPrefix, keys.deliveryPrefix];

/**
 * Why an item's identity attributes disagree with its key, or undefined: an organization item whose
 * `id` names another organization, or a key lookup item whose `organizationId` is not its index's,
 * would give one organization's keys and links the rights of another.
 */
function identityProblem(item: Item, owner: string | undefined): string | undefined {
  const pk = plain(item.pk);
  const sk = plain(item.sk);
  const id = plain(item.id);
  if (owner !== undefined && (sk === 'ORG' || sk === 'ORGINDEX') && id !== owner) return `id ${JSON.stringify(id ?? null)} is not the organization of its key (${owner})`;
  if (typeof sk === 'string' && item.id !== undefined) {
    const prefix = ID_PREFIXES.find((p) => sk.startsWith(p));
    if (prefix && id !== sk.slice(prefix.length)) return `id ${JSON.stringify(id ?? null)} is not the id in its key (${sk})`;
  }
  if (typeof pk === 'string' && pk.startsWith('APIKEY#')) {
    const organizationId = plain(item.organizationId);
    if (plain(item.hash) !== pk.slice('APIKEY#'.length)) return 'an API key\'s hash must be the one in its key';
    if (typeof organizationId !== 'string' || plain(item.gsi1pk) !== keys.apiKeyIndex(organizationId, '').gsi1pk || plain(item.gsi1sk) !== plain(item.keyId)) {
      return 'an API key\'s organizationId and keyId must be those of its index entry (gsi1pk ORG#<organizationId>#APIKEYS, gsi1sk <keyId>)';
    }
  }
  if (owner !== undefined && sk === keys.endpointSlots('').sk) {
    const count = Number((item.count as { N?: string } | undefined)?.N);
    if (!Number.isInteger(count) || count < 0) return 'the endpoints\' slot count must be a whole number, 0 or more';
  }
  if (owner !== undefined && sk === keys.apiKeySlots('').sk) {
    const version = Number((item.version as { N?: string } | undefined)?.N);
    if (!(item.live as { M?: unknown } | undefined)?.M || !Number.isInteger(version) || version < 0) return 'the keys\' slot item needs its live map and a whole version, 0 or more';
  }
  return undefined;
}
const plain = (value: AttributeValue | undefined): unknown => (value as { S?: string } | undefined)?.S;

/** Why an endpoint item is not one the API could have written, or undefined. */
function endpointProblem(deps: Pick<Deps, 'config'>, item: Item): string | undefined {
  const url = plain(item.url);
  if (typeof url !== 'string') return 'an endpoint needs its url (a string)';
  try {
    validateUrl(deps as Deps, url);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return `url ${url.slice(0, 100)}: ${((error.extra.errors ?? []) as { message: string }[]).map((e) => e.message).join('; ') || error.message}`;
  }
  const headers = item.headers;
  if (headers !== undefined) {
    const map = (headers as { M?: Item }).M;
    if (!map) return 'headers must be a map of header name to value';
    const values = Object.fromEntries(Object.entries(map).map(([name, value]) => [name, plain(value)]));
    const { refused } = sendableHeaders(values);
    if (refused.length > 0) return `headers break the header rules (a reserved or bad name, a bad value, or more than the bound): ${refused.map((n) => JSON.stringify(n)).join(', ')}`;
  }
  return undefined;
}

/** Checks one line of `<from>.jsonl`. */
export function checkLine(deps: Pick<Deps, 'config'>, from: TableName, line: string): Checked {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (!isRecord(parsed)) return { ok: false, reason: `not an item (a JSON object of attributes): ${parsed === null ? 'null' : Array.isArray(parsed) ? 'a list' : typeof parsed}` };
  const problem = Object.entries(parsed).map(([name, value]) => attributeProblem(value, name)).find(Boolean);
  if (problem) return { ok: false, reason: problem };
  const item = parsed as Item;
  const to = destination(from, item);
  const spec = tables[to];
  for (const key of [spec.partitionKey, 'sortKey' in spec ? spec.sortKey : undefined]) {
    if (key && !(key.name in item && key.type in item[key.name])) return { ok: false, reason: `the ${to} table's key ${key.name} (${key.type}) is missing` };
  }
  const bytes = itemBytes(item);
  if (bytes > MAX_ITEM_BYTES) return { ok: false, reason: `${bytes} bytes: over DynamoDB's ${MAX_ITEM_BYTES}-byte item limit` };
  const pk = plain(item.pk);
  const owner = typeof pk === 'string' && pk.startsWith('ORG#') ? pk.slice(4) : undefined;
  if (owner !== undefined) {
    for (const name of ORGANIZATION_ATTRIBUTES) {
      const named = plain(item[name]);
      if (item[name] !== undefined && named !== owner) return { ok: false, reason: `${name} ${JSON.stringify(named ?? item[name])} is not the organization of its key (${owner})` };
    }
  }
  const identity = identityProblem(item, owner);
  if (identity) return { ok: false, reason: identity };
  const sk = plain(item.sk);
  if (to === 'endpoints' && typeof sk === 'string' && sk.startsWith(keys.endpointPrefix)) {
    const bad = endpointProblem(deps, item);
    if (bad) return { ok: false, reason: bad };
  }
  return { ok: true, to, item };
}
