/**
 * The CAPTCHA verify URLs of the settings document (docs/leads.md#lead-forms-in-public-pages-publishable-keys): tests point them at a loopback
 * stub; a deployed stage never sends an organization's CAPTCHA secret over plain http.
 */
import { describe, it, expect } from '@jest/globals';
import { asDeployed, parseConfig } from '../../../functions/core/platform/config.js';

describe('captchaVerifyUrls', () => {
  it('defaults to none (each provider’s own URL applies) and a 3 s time-out', () => {
    const settings = parseConfig({});
    expect(settings.captchaVerifyUrls).toEqual({});
    expect(settings.captchaTimeoutMs).toBe(3000);
  });

  it('refuses what is not a URL, an unknown provider, and a time-out past the function’s', () => {
    expect(() => parseConfig({ captchaVerifyUrls: { turnstile: 'not a url' } })).toThrow();
    expect(() => parseConfig({ captchaVerifyUrls: { friendlycaptcha: 'https://x.example' } })).toThrow();
    expect(() => parseConfig({ captchaTimeoutMs: 20_000 })).toThrow(/captchaTimeoutMs must be at most 10000/);
  });

  it('on a deployed stage, drops a plain-http URL with a warning and keeps https ones', () => {
    const warnings: string[] = [];
    const settings = parseConfig({ captchaVerifyUrls: { turnstile: 'http://127.0.0.1:9999/siteverify', hcaptcha: 'https://verify.example/siteverify' } });
    const deployed = asDeployed(settings, 'test', (m) => warnings.push(m));
    expect(deployed.captchaVerifyUrls).toEqual({ hcaptcha: 'https://verify.example/siteverify' });
    expect(warnings).toEqual([expect.stringContaining('captchaVerifyUrls.turnstile is not https')]);
    expect(asDeployed(parseConfig({ captchaVerifyUrls: { hcaptcha: 'https://verify.example/' } }), 'test', (m) => warnings.push(m)).captchaVerifyUrls).toEqual({ hcaptcha: 'https://verify.example/' });
  });
});
