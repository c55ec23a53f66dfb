import { describe, expect, it } from '@jest/globals';
import { defaultConfig, parseConfig, rateLimitCeilingPerMinute } from '../../../functions/core/platform/config.js';

describe('settings', () => {
  it('keeps every plan limit and the default at or under the WAF.s per-key limit, so the WAF never refuses a key first', () => {
    for (const limit of [...Object.values(defaultConfig.planRateLimits), defaultConfig.defaultRateLimitPerMinute]) {
      expect(limit).toBeLessThanOrEqual(rateLimitCeilingPerMinute);
    }
    expect(() => parseConfig({ planRateLimits: { enterprise: rateLimitCeilingPerMinute + 1 } })).toThrow(/planRateLimits/);
    expect(() => parseConfig({ defaultRateLimitPerMinute: rateLimitCeilingPerMinute + 1 })).toThrow(/defaultRateLimitPerMinute/);
    expect(parseConfig({ planRateLimits: { enterprise: rateLimitCeilingPerMinute } }).planRateLimits.enterprise).toBe(rateLimitCeilingPerMinute);
  });
});
