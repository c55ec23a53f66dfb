/**
 * Event names and what an endpoint subscribes to (docs/events.md, docs/webhooks.md): the names as data, read by the
 * endpoints (which validate subscriptions) and by the event catalog (events/catalog.ts, which adds
 * schemas and examples). Here in delivery/ because events/ imports delivery/, never the reverse.
 */
import { validationFailed } from '../platform/errors.js';

export const eventTypes = [
  'client.created', 'client.updated', 'client.deleted',
  'work_order.created', 'work_order.status_changed', 'work_order.completed', 'work_order.deleted',
  'invoice.created', 'invoice.sent', 'invoice.paid',
  'booking.received',
  'webhook.test',
] as const;
export type EventType = (typeof eventTypes)[number];

/** Underscore aliases accepted wherever an event is named (docs/events.md); payloads always carry the dotted name. */
export const aliases: Readonly<Record<string, EventType>> = {
  client_created: 'client.created',
  client_updated: 'client.updated',
  work_order_created: 'work_order.created',
  work_order_completed: 'work_order.completed',
  invoice_sent: 'invoice.sent',
  invoice_paid: 'invoice.paid',
  booking_received: 'booking.received',
};

export function aliasOf(type: EventType): string | undefined {
  return Object.entries(aliases).find(([, t]) => t === type)?.[0];
}

/** The canonical dotted name of `name` (dotted or alias, surrounding spaces ignored), or undefined. */
export function normalizeEventName(name: string): EventType | undefined {
  const trimmed = name.trim();
  if ((eventTypes as readonly string[]).includes(trimmed)) return trimmed as EventType;
  return Object.hasOwn(aliases, trimmed) ? aliases[trimmed] : undefined;
}

/** What a subscription may name, for error messages: `client.created (client_created), …`. */
const subscribable = eventTypes
  .filter((t) => t !== 'webhook.test')
  .map((t) => {
    const alias = aliasOf(t);
    return alias ? `${t} (${alias})` : t;
  })
  .join(', ');

/**
 * A subscription: `all` (or `*`) → `['*']`, or event names in either form (an array or a comma
 * list) → their canonical names, deduplicated. Unknown names are refused with the valid ones.
 * `webhook.test` is accepted but changes nothing: it is delivered whatever the subscription.
 */
export function parseSubscription(input: string | readonly string[]): string[] {
  const names = (typeof input === 'string' ? input.split(',') : [...input]).map((n) => String(n).trim()).filter(Boolean);
  if (names.length === 0) throw validationFailed([{ field: 'events', message: 'give `all` or at least one event name' }]);
  if (names.some((n) => n === 'all' || n === '*')) return ['*'];
  const unknown = names.filter((n) => !normalizeEventName(n));
  if (unknown.length > 0) {
    const what = unknown.length === 1 ? `unknown event ${unknown[0]}` : `unknown events ${unknown.join(', ')}`;
    throw validationFailed([{ field: 'events', message: `${what}; valid: all, ${subscribable}` }]);
  }
  return [...new Set(names.map((n) => normalizeEventName(n)!))];
}

/** Whether an endpoint subscribed to `events` (canonical names or `*`) receives `type`. */
export const isSubscribed = (events: readonly string[], type: string) => type === 'webhook.test' || events.includes('*') || events.includes(type);
