/** The double-submit guard's claims (functions/core/intake/duplicates.ts; docs/leads.md "Duplicates"). */
import { describe, it, expect } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import { adoptedToken, claimState, guardClause, guardedClient, ownGuard, submissionGuard } from '../../../functions/core/intake/duplicates.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';

const guard = submissionGuard('key_1', parseLead({ name: 'Ada Lovelace', email: 'ada@example.com' }));
const n = guard.slot;
/** The slot as an update with `guardClause` leaves it. */
const slotOf = (clientId: string, token: string, now: number) => {
  const { values } = guardClause(guard, clientId, token, now);
  return marshall({ [`dh${n}`]: values[':gh'], [`dc${n}`]: values[':gc'], [`dt${n}`]: values[':gt'], [`dr${n}`]: values[':gr'] });
};

describe('the double-submit guard', () => {
  it('tells a request its own claim by its token, not by the client it names: two identical merges at the same millisecond are not each other\'s', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const first = slotOf('cli_earlier', 'cli_fresh1', now);
    expect(ownGuard(first, guard, 'cli_fresh1')).toBe(true);
    expect(ownGuard(first, guard, 'cli_fresh2')).toBe(false);
    expect(guardedClient(first, guard, now)).toEqual({ clientId: 'cli_earlier', token: 'cli_fresh1' });
  });

  it('says what became of a claim: held, adopted by a retry, released by its refund, or taken by another submission', () => {
    const now = Date.now();
    const held = slotOf('cli_1', 'cli_1', now);
    expect(claimState(held, guard, 'cli_1')).toBe('held');
    expect(claimState({ ...held, [`dr${n}`]: { S: adoptedToken('cli_1', 'cli_2') } }, guard, 'cli_1')).toBe('adopted');
    expect(claimState({}, guard, 'cli_1')).toBe('released');
    expect(claimState(slotOf('cli_9', 'cli_9', now), guard, 'cli_1')).toBe('taken');
  });
});
