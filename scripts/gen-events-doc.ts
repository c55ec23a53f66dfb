/** Writes docs/events.md from the event catalog (`npm run docs:events`); a unit test checks it is current. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { API_VERSION, catalog, schemas } from '../functions/core/events/catalog.js';
import { entities } from '../functions/core/events/public-objects.js';

interface JsonSchema {
  type?: string; format?: string; enum?: unknown[]; description?: string; minLength?: number;
  items?: JsonSchema; properties?: Record<string, JsonSchema>; required?: string[]; additionalProperties?: JsonSchema | boolean;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A short, readable type for a field table. */
function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (s.format === 'date-time') return 'string (ISO 8601)';
  if (s.type === 'array' && s.items) return s.items.properties ? `array of { ${Object.keys(s.items.properties).join(', ')} }` : `array of ${typeOf(s.items)}`;
  if (s.type === 'object') return s.properties ? `object { ${Object.keys(s.properties).join(', ')} }` : 'object of string, number or boolean';
  return s.type ?? 'any';
}

function fieldTable(entity: keyof typeof schemas): string[] {
  const json = z.toJSONSchema(schemas[entity], { io: 'output' }) as JsonSchema;
  return [
    '| field | type | always present | notes |',
    '|---|---|---|---|',
    ...Object.entries(json.properties ?? {}).map(([name, s]) =>
      `| \`${name}\` | ${typeOf(s)} | ${json.required?.includes(name) ? 'yes' : ''} | ${cell(s.description ?? '')} |`),
  ];
}

export function render(): string {
  const lines = [
    '# Events',
    '',
    '<!-- Generated from functions/core/events/ by `npm run docs:events` (scripts/gen-events-doc.ts). Do not edit by hand. -->',
    '',
    'Changes to CRM records (clients; work orders, invoices and bookings) become events, POSTed to the webhook',
    'endpoints that subscribe to them, signed as described in [webhooks.md](webhooks.md). The records and how to',
    'write them are in [data-model.md](data-model.md). `npx crm events catalog` lists the events too.',
    '',
    '## The payload',
    '',
    'Every event has the same envelope:',
    '',
    '```json',
    JSON.stringify({ id: 'evt_…', type: 'client.updated', api_version: API_VERSION, timestamp: '2026-11-02T09:15:00.000Z', organization_id: 'org_…', data: { object: { '…': '…' }, previous: { '…': '…' } } }, null, 2),
    '```',
    '',
    '| field | meaning |',
    '|---|---|',
    '| `id` | `evt_` + 22 characters. Derived from the change itself, so every retry, redelivery or re-read of the same change carries the same id, also sent as the `webhook-id` header. Process each id once. (A lead\'s own events, the `client.created` of a lead-endpoint client and the `client.updated` of each submission merged into a client, derive from the client, the submission\'s number and a merged submission\'s request id rather than the stream position, so the settings page\'s trail finds them by key: docs/data-model.md "A lead\'s trail".) |',
    '| `type` | The canonical, dotted event name. |',
    '| `api_version` | The payload schema, a date (see [Versioning](#versioning-and-deprecation)). |',
    '| `timestamp` | When the change happened (ISO 8601, UTC), not when it was delivered: the stream record\'s time, but never earlier than the record\'s own `updated_at` (`created_at` where it has none). |',
    '| `organization_id` | The organization whose record changed; an endpoint only ever receives its own organization\'s events. |',
    '| `data.object` | The record after the change; for deletions, as it was before. Its fields are listed under [Objects](#objects). |',
    '| `data.previous` | Only on the events that say so: the old values of what changed (`null` where a field was absent). |',
    '| `test` | Only on a test send from the settings page (any event type an endpoint subscribes to): `true`, and the payload is the example below, not a real record. |',
    '',
    'Delivery is at least once and in no guaranteed order: deduplicate by `id`, and compare `timestamp` or',
    '`updated_at` rather than arrival order when two events concern the same record. An import (25 or',
    'more of an organization\'s events in one batch of changes, and for 10 s after, its batches of 5 or',
    'more) is queued through a bulk queue of its own',
    '(docs/capacity.md "Fan-out lanes"), so a change written just after an import may arrive before',
    'the import\'s last events; within one change, its events keep the order below.',
    '',
    '## Names and subscriptions',
    '',
    '- Names are `<record>.<what happened>`, lower case, dotted. Several have an underscore alias',
    '  (`client_created` for `client.created`), accepted wherever an event is named; payloads always carry the dotted name.',
    '- An endpoint subscribes to `all` or to a list of names in either form (`--events client.created,work_order_completed`).',
    '  An unknown name is refused, and the error lists the valid ones. A subscription to `all` includes events added later.',
    '- `webhook.test` is delivered to an endpoint whatever it subscribes to.',
    '',
    '## What `data.object` contains',
    '',
    '- Exactly the documented fields of the record, in the documented order; absent and `null` values are left out.',
    '  Storage attributes (`pk`, `sk`, index keys, `entity`, `expiresAt`) and any other attribute the CRM keeps on the',
    '  record are never sent: a field reaches receivers only once it is added to the catalog.',
    '- A client carries `sms_consent` (`false` unless it is `true`), but never the proof of consent (`sms_consent_proof`:',
    '  source, capture time, IP address, user agent, API key id). It is personal data a receiver does not need to act',
    '  on the consent, and it stays in the CRM, where it can be produced if consent is ever disputed.',
    '',
    '## When events are emitted',
    '',
    'Events are derived from the DynamoDB streams of the clients and work-orders tables, one stream record at a time.',
    '',
    '| record | inserted | changed | deleted |',
    '|---|---|---|---|',
    '| client | `client.created` | `client.updated` when a field of `data.object` other than `updated_at` changes | `client.deleted` when a user deletes it; expiry by TTL: nothing |',
    '| work order | `work_order.created` (+ `work_order.completed` if created completed) | status change: `work_order.status_changed`, + `work_order.completed` when the new status is `completed`; any other change: nothing | `work_order.deleted` |',
    '| invoice | `invoice.created` (+ `invoice.sent` if created with `sent_at`, + `invoice.paid` if created with payments) | `invoice.sent` when `sent_at` is set where it was not; `invoice.paid` when payments are added (matched by payment `id`); anything else: nothing | nothing |',
    '| booking | `booking.received` | nothing | nothing |',
    '',
    'One change can produce several events, in the order above (for example `work_order.status_changed` then',
    '`work_order.completed`, or `invoice.sent` then `invoice.paid`). A write that changes nothing visible, such as',
    'setting a field to its current value, produces nothing. An item without a known `entity` produces nothing.',
    '',
    'The organization of an event is the partition key of the changed item (`ORG#<id>`), never one of its attributes.',
    'An item whose `organization_id` is missing or names another organization produces nothing for anyone: the',
    'fan-out drops it, logs its key\'s organization and stream position (no record content) and counts it in the',
    '`TenantMismatch` metric, which is alarmed.',
    '',
    'An endpoint receives every event of a change written after it was added: the fan-out reads the organization\'s',
    'endpoints afresh (a consistent read, once per organization per stream batch), not from a cache.',
    '',
    '## Versioning and deprecation',
    '',
    `\`api_version\` names the payload schema; the first is \`${API_VERSION}\`, and it is the one sent today.`,
    '',
    '- Within a version, additive changes may happen at any time without notice: new optional fields in',
    '  `data.object` or `data.previous`, new event types (delivered only to `all` subscriptions and to endpoints that',
    '  name them), new values of open-ended fields such as a client\'s `status`. Receivers must ignore what they do not know.',
    '- Removing or renaming a field, changing its type or meaning, or changing when an event is emitted happens only',
    '  in a new `api_version`. A new version is opt-in per endpoint: an endpoint keeps receiving the version it uses',
    '  until its owner switches it.',
    '- A version is announced as deprecated at the earliest when its successor is released, and is still served for',
    '  at least 12 months after that announcement, with what changed and how to migrate.',
    '',
    '## Catalog',
    '',
    '| event | alias | emitted when |',
    '|---|---|---|',
    ...catalog.map((e) => `| [\`${e.type}\`](#${e.type.replace(/\./g, '')}) | ${e.alias ? `\`${e.alias}\`` : '—'} | ${cell(e.description)} |`),
    '',
  ];
  for (const e of catalog) {
    const objectLink = e.entity === 'webhook_test' ? '' : ` \`data.object\`: [${e.entity}](#${e.entity}).`;
    lines.push(`### ${e.type}`, '', `${e.description}${objectLink}`, '', '```json', JSON.stringify(e.example, null, 2), '```', '');
  }
  lines.push('## Objects', '');
  for (const entity of entities) lines.push(`### ${entity}`, '', ...fieldTable(entity), '');
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(new URL('../docs/events.md', import.meta.url), render());
  console.log('wrote docs/events.md');
}
