/** Writes docs/events.md from the event catalog (`npm run docs:events`); a unit test checks it is current. */
import { writeFileSync } from 'node:fs';
import { API_VERSION, catalog } from '../functions/core/events/catalog.js';

export function render(): string {
  const lines = [
    '# Events',
    '',
    '<!-- Generated from functions/core/events/catalog.ts by `npm run docs:events`. Do not edit. -->',
    '',
    'Changes to clients and to work orders, invoices and bookings become events, delivered to the',
    'webhook endpoints that subscribe to them ([webhooks.md](webhooks.md)). Every payload has the same envelope:',
    '',
    '```json',
    '{ "id": "evt_…", "type": "client.created", "api_version": "' + API_VERSION + '", "timestamp": "…",',
    '  "organization_id": "org_…", "data": { "object": { … }, "previous": { … } } }',
    '```',
    '',
    '- `id` is stable: a retry, a re-drive or a re-read of the same change carries the same id (and the same',
    '  `webhook-id` header). Use it to drop duplicates.',
    '- `data.object` is the record after the change (before it, for deletions). `data.previous`, where present,',
    '  holds the old values of what changed.',
    '- Subscriptions take `all` or a list of names, dotted (`client.created`) or with underscores (`client_created`).',
    '- Personal data in payloads is limited to the record itself; the SMS consent proof (IP, user agent) is never sent.',
    '',
    '## Versioning',
    '',
    `\`api_version\` names the payload schema (first: \`${API_VERSION}\`). Within a version, new optional fields and`,
    'new event types may appear at any time: receivers must ignore what they do not know. Removing or renaming a',
    'field, or changing its type, happens only in a new `api_version`, which endpoints opt into; the previous',
    'version keeps being served for at least 12 months after the new one is announced.',
    '',
    '## Catalog',
    '',
    '| event | alias | when |',
    '|---|---|---|',
    ...catalog.map((e) => `| \`${e.type}\` | ${e.alias ? `\`${e.alias}\`` : '—'} | ${e.description} |`),
    '',
  ];
  for (const e of catalog) {
    lines.push(`### ${e.type}`, '', e.description, '', '```json', JSON.stringify(e.example, null, 2), '```', '');
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync('docs/events.md', render());
  console.log('wrote docs/events.md');
}
