/** The double-submit guard's claims as a billing item's slot holds them (functions/core/tenancy/double-submit.ts; docs/leads.md "Duplicates"). */
import { describe, it, expect } from '@jest/globals';
import { adoptedToken, claimState, guardedSubmission, ownClaim, DOUBLE_SUBMIT_MS, type GuardClaim } from '../../../functions/core/tenancy/double-submit.js';
import { submissionGuard } from '../../../functions/core/intake/duplicates.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';

const guard = submissionGuard('key_1', parseLead({ name: 'Ada Lovelace', email: 'ada@example.com' }));
const n = guard.slot;
/** The slot as a bill with this claim leaves it. */
const slotOf = ({ clientId, token, at }: GuardClaim) => ({ [`dh${n}`]: guard.hash, [`dc${n}`]: clientId, [`dt${n}`]: at, [`dr${n}`]: token });
const claim = (clientId: string, token: string, at: number): GuardClaim => ({ guard, clientId, token, at });

describe('the double-submit guard', () => {
  it('tells a request its own claim by its token, not by the client it names: two identical merges at the same millisecond are not each other\'s', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const first = slotOf(claim('cli_earlier', 'cli_fresh1', now));
    expect(ownClaim(first, claim('cli_earlier', 'cli_fresh1', now))).toBe(true);
    expect(ownClaim(first, claim('cli_earlier', 'cli_fresh2', now))).toBe(false);
    expect(guardedSubmission(first, claim('cli_earlier', 'cli_fresh2', now))).toEqual({ clientId: 'cli_earlier', token: 'cli_fresh1' });
  });

  it('answers a repeat within 10 minutes only', () => {
    const then = Date.parse('2030-01-01T00:00:00Z');
    const first = slotOf(claim('cli_1', 'cli_1', then));
    expect(guardedSubmission(first, claim('cli_2', 'cli_2', then + DOUBLE_SUBMIT_MS))).toEqual({ clientId: 'cli_1', token: 'cli_1' });
    expect(guardedSubmission(first, claim('cli_2', 'cli_2', then + DOUBLE_SUBMIT_MS + 1))).toBeUndefined();
  });

  it('says what became of a claim: held, adopted by a retry, released by its refund, or taken by another submission', () => {
    const now = Date.now();
    const held = slotOf(claim('cli_1', 'cli_1', now));
    expect(claimState(held, guard, 'cli_1')).toBe('held');
    expect(claimState({ ...held, [`dr${n}`]: adoptedToken('cli_1', 'cli_2') }, guard, 'cli_1')).toBe('adopted');
    expect(claimState({}, guard, 'cli_1')).toBe('released');
    expect(claimState(slotOf(claim('cli_9', 'cli_9', now)), guard, 'cli_1')).toBe('taken');
  });
});
