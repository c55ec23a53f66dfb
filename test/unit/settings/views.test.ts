/** When "Retry now" is refused (settings/views.ts awaitingRedrive): re-queued and not attempted since. */
import { describe, it, expect } from '@jest/globals';
import { awaitingRedrive } from '../../../functions/core/settings/views.js';

const at = (s: number) => new Date(s * 1000).toISOString();

describe('awaitingRedrive', () => {
  it('holds from a re-drive until its first attempt is recorded, and never for a settled or never re-driven delivery', () => {
    const attempts = [{ at: at(10), attempt: 1, latencyMs: 1, statusCode: 500 }];
    expect(awaitingRedrive({ status: 'pending', redrivenAt: at(20), attempts })).toBe(true);
    expect(awaitingRedrive({ status: 'pending', redrivenAt: at(20), attempts: [...attempts, { ...attempts[0], at: at(21) }] })).toBe(false);
    expect(awaitingRedrive({ status: 'pending', attempts })).toBe(false);
    expect(awaitingRedrive({ status: 'skipped', redrivenAt: at(20), attempts })).toBe(false);
    expect(awaitingRedrive({ status: 'pending', redrivenAt: at(20), attempts: [] })).toBe(true);
  });
});
