import { describe, expect, it } from '@jest/globals';
import { edgeKeyLimitPerMinute } from '../../lib/topology.js';
import { defaultSettings, parseSettings } from '../../functions/core/platform/settings.js';

describe('settings', () => {
  it('keeps every plan limit and the default at or under the edge per-key limit, so the WAF never refuses a key first', () => {
    for (const limit of [...Object.values(defaultSettings.planRateLimits), defaultSettings.defaultRateLimitPerMinute]) {
      expect(limit).toBeLessThanOrEqual(edgeKeyLimitPerMinute);
    }
    expect(() => parseSettings({ planRateLimits: { enterprise: edgeKeyLimitPerMinute + 1 } })).toThrow(/planRateLimits/);
    expect(() => parseSettings({ defaultRateLimitPerMinute: edgeKeyLimitPerMinute + 1 })).toThrow(/defaultRateLimitPerMinute/);
    expect(parseSettings({ planRateLimits: { enterprise: edgeKeyLimitPerMinute } }).planRateLimits.enterprise).toBe(edgeKeyLimitPerMinute);
  });
});
