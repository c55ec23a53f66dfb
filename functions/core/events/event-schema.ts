/**
 * Each catalog event's payload as a JSON Schema (draft 2020-12), from the same zod schemas the
 * payloads are built and documented with (public-objects.ts; docs/events.md is generated from
 * them too): the envelope, with `data.object` the event's record. Served by the settings API's
 * event catalog (GET /api/settings/events) beside each event's example.
 */
import * as z from 'zod';
import { API_VERSION, schemas, type CatalogEntry } from './catalog.js';

const cache = new Map<string, object>();

export function eventSchema(entry: Pick<CatalogEntry, 'type' | 'entity'>): object {
  const cached = cache.get(entry.type);
  if (cached) return cached;
  const object = z.toJSONSchema(schemas[entry.entity], { io: 'output' });
  const { $schema: _s, ...objectSchema } = object as Record<string, unknown>;
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: entry.type,
    type: 'object',
    required: ['id', 'type', 'api_version', 'timestamp', 'organization_id', 'data'],
    properties: {
      id: { type: 'string', pattern: '^evt_', description: 'Also the webhook-id header: process each id once' },
      type: { const: entry.type },
      api_version: { const: API_VERSION },
      timestamp: { type: 'string', format: 'date-time', description: 'When the change happened' },
      organization_id: { type: 'string' },
      test: { const: true, description: 'Only on a test send from the settings page: the example payload, not a real record' },
      data: {
        type: 'object',
        required: ['object'],
        properties: {
          object: objectSchema,
          previous: { type: 'object', description: 'Only on events that say so: the old values of what changed' },
        },
      },
    },
  };
  cache.set(entry.type, schema);
  return schema;
}
