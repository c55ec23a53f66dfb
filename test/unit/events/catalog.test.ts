/** The catalog: names and aliases, subscriptions, example payloads, and the generated docs. */
import { describe, it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { catalog, eventTypes, isSubscribed, normalizeEventName, parseSubscription, schemas } from '../../../functions/core/events/catalog.js';
import { render } from '../../../scripts/gen-events-doc.js';

describe('the event catalog', () => {
  it('has one documented example per event, valid against its schema', () => {
    expect(catalog.map((e) => e.type)).toEqual([...eventTypes]);
    for (const entry of catalog) {
      expect(entry.example.type).toBe(entry.type);
      expect(schemas[entry.entity].strict().safeParse(entry.example.data.object).error).toBeUndefined();
    }
  });

  it('accepts either naming form and refuses unknown names, listing the valid ones', () => {
    expect(normalizeEventName('work_order_completed')).toBe('work_order.completed');
    expect(normalizeEventName('client.created')).toBe('client.created');
    expect(normalizeEventName('client.exploded')).toBeUndefined();
    expect(parseSubscription('client_created, invoice.paid,client.created')).toEqual(['client.created', 'invoice.paid']);
    expect(parseSubscription('all')).toEqual(['*']);
    expect(() => parseSubscription(['client.created', 'nope'])).toThrow(expect.objectContaining({ status: 422 }) as never);
    expect(() => parseSubscription('')).toThrow();
  });

  it('delivers webhook.test whatever the subscription', () => {
    expect(isSubscribed(['invoice.paid'], 'webhook.test')).toBe(true);
    expect(isSubscribed(['invoice.paid'], 'client.created')).toBe(false);
    expect(isSubscribed(['*'], 'client.created')).toBe(true);
  });

  it('is committed as generated in docs/events.md (run `npm run docs:events`)', () => {
    expect(readFileSync('docs/events.md', 'utf8')).toBe(render());
  });
});
