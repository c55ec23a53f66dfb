/**
 * The bulk messages an organization's large share is handed off in (functions/core/events/bulk-share.ts):
 * bounded in size and count, each event once with its endpoints, and read back into exactly the
 * deliveries the lane planned.
 */
import { describe, it, expect } from '@jest/globals';
import { BULK_MESSAGE_BYTES, BULK_MESSAGE_EVENTS, bulkMessages, plannedOf, readBulkShare } from '../../../functions/core/events/bulk-share.js';

const event = (i: number, bytes = 100) => ({ id: `evt_${i}`, type: 'client.created', organization_id: 'org_imp', data: { object: { id: `cli_${i}`, notes: 'n'.repeat(bytes) } } }) as never;
const endpoints = [{ id: 'ep_a', enabled: true }, { id: 'ep_b', enabled: false, disabledReason: 'paused by the team' }];
const share = (n: number, bytes?: number) => Array.from({ length: n }, (_, i) => endpoints.map((endpoint) => ({ event: event(i, bytes), endpoint }))).flat();

describe('bulk messages', () => {
  it('carry each event once with the indexes of its endpoints, and read back into the planned deliveries in order', () => {
    const planned = share(3);
    const [message, ...more] = bulkMessages(planned);
    expect(more).toEqual([]);
    expect(message.organizationId).toBe('org_imp');
    expect(message.endpoints).toEqual(endpoints);
    expect(message.events.map((e) => e.to)).toEqual([[0, 1], [0, 1], [0, 1]]);
    expect(plannedOf(readBulkShare(JSON.stringify(message)))).toEqual(planned);
  });

  it(`hold at most ${BULK_MESSAGE_EVENTS} events and ${BULK_MESSAGE_BYTES} bytes each, every delivery in exactly one, in order`, () => {
    for (const [n, bytes] of [[250, 100], [60, 5_000]]) {
      const planned = share(n, bytes);
      const messages = bulkMessages(planned);
      expect(messages.length).toBeGreaterThan(1);
      for (const m of messages) {
        expect(m.events.length).toBeLessThanOrEqual(BULK_MESSAGE_EVENTS);
        expect(Buffer.byteLength(JSON.stringify(m))).toBeLessThanOrEqual(BULK_MESSAGE_BYTES);
      }
      expect(messages.flatMap(plannedOf)).toEqual(planned);
    }
  });

  it('refuses a body that is not one (it then goes to the bulk dead-letter queue), or names an endpoint it does not carry', () => {
    const message = bulkMessages(share(1))[0];
    expect(() => readBulkShare('{"deliveryId":"dlv_x"}')).toThrow('not a bulk share message');
    expect(() => readBulkShare(JSON.stringify({ ...message, events: [{ ...message.events[0], to: [5] }] }))).toThrow('not a bulk share message');
    expect(() => readBulkShare(JSON.stringify({ ...message, organizationId: 'org_other' }))).toThrow('not a bulk share message');
    expect(() => readBulkShare('not json')).toThrow();
  });
});
