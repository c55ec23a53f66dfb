/** When "Retry now" is refused (settings/views.ts awaitingRedelivery): re-queued and not attempted since. */
import { describe, it, expect } from '@jest/globals';
import { awaitingRedelivery } from '../../../functions/core/settings/views.js';

const at = (s: number) => new Date(s * 1000).toISOString();

describe('awaitingRedelivery', () => {
  it('holds from a redelivery until its first attempt is recorded, and never for a settled or never redelivered delivery', () => {
    const attempts = [{ at: at(10), attempt: 1, latencyMs: 1, statusCode: 500 }];
    expect(awaitingRedelivery({ status: 'pending', redrivenAt: at(20), attempts })).toBe(true);
    expect(awaitingRedelivery({ status: 'pending', redrivenAt: at(20), attempts: [...attempts, { ...attempts[0], at: at(21) }] })).toBe(false);
    expect(awaitingRedelivery({ status: 'pending', attempts })).toBe(false);
    expect(awaitingRedelivery({ status: 'skipped', redrivenAt: at(20), attempts })).toBe(false);
    expect(awaitingRedelivery({ status: 'pending', redrivenAt: at(20), attempts: [] })).toBe(true);
  });
});
