import { describe, expect, it } from '@jest/globals';
import { defaultSettings, parseSettings, rateLimitCeilingPerMinute } from '../../functions/core/platform/settings.js';

describe('settings', () => {
  it('keeps every plan limit and the default at or under the WAF.s per-key limit, so the WAF never refuses a key first', () => {
    for (const limit of [...Object.values(defaultSettings.planRateLimits), defaultSettings.defaultRateLimitPerMinute]) {
      expect(limit).toBeLessThanOrEqual(rateLimitCeilingPerMinute);
    }
    expect(() => parseSettings({ planRateLimits: { enterprise: rateLimitCeilingPerMinute + 1 } })).toThrow(/planRateLimits/);
    expect(() => parseSettings({ defaultRateLimitPerMinute: rateLimitCeilingPerMinute + 1 })).toThrow(/defaultRateLimitPerMinute/);
    expect(parseSettings({ planRateLimits: { enterprise: rateLimitCeilingPerMinute } }).planRateLimits.enterprise).toBe(rateLimitCeilingPerMinute);
  });
});
