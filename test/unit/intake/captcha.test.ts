/**
 * CAPTCHA verification (functions/core/intake/captcha.ts; docs/leads.md "Lead forms in public
 * pages"): each organization's tokens are checked with its own secret, even while another's is
 * cached. The provider's siteverify call is stubbed at its port (siteVerifyPort), never the network.
 */
import { describe, it, expect, beforeEach } from '@jest/globals';
import { clearCaptchaCache, siteVerifyPort, verifyCaptcha } from '../../../functions/core/intake/captcha.js';
import { createOrganization, setOrganizationCaptcha } from '../../../functions/core/tenancy/organizations.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

/** A provider that passes a token only with the secret of the site that issued it; it records the secrets it was sent. */
function givenProvider(tokensBySecret: Record<string, string>) {
  const secretsSent: string[] = [];
  const verify = async (_url: string, init: RequestInit) => {
    const form = new URLSearchParams(init.body as URLSearchParams);
    const secret = form.get('secret') ?? '';
    secretsSent.push(secret);
    const success = tokensBySecret[secret] === form.get('response');
    return new Response(JSON.stringify(success ? { success } : { success, 'error-codes': ['invalid-input-response'] }), { status: 200 });
  };
  return { verify, secretsSent };
}

async function givenOrganizationWithCaptcha(deps: Deps, name: string, secret: string): Promise<string> {
  const org = await createOrganization(deps, { name });
  await setOrganizationCaptcha(deps, org.id, { provider: 'turnstile', secret });
  return org.id;
}

describe('CAPTCHA verification', () => {
  beforeEach(() => clearCaptchaCache());

  it('checks each organization\'s tokens with its own secret, while another organization\'s secret is cached', async () => {
    const { deps: memory } = memoryStores();
    const provider = givenProvider({ 'secret-of-a': 'token-from-a', 'secret-of-b': 'token-from-b' });
    const deps = siteVerifyPort.with(memory, provider.verify);
    const a = await givenOrganizationWithCaptcha(deps, 'Org A', 'secret-of-a');
    const b = await givenOrganizationWithCaptcha(deps, 'Org B', 'secret-of-b');

    await verifyCaptcha(deps, { organizationId: a, provider: 'turnstile', token: 'token-from-a' });
    await verifyCaptcha(deps, { organizationId: b, provider: 'turnstile', token: 'token-from-b' });
    // A token of A's site does not pass B's form (B's secret, not A's cached one, is sent).
    await expect(verifyCaptcha(deps, { organizationId: b, provider: 'turnstile', token: 'token-from-a' })).rejects.toMatchObject({ status: 403 });
    expect(provider.secretsSent).toEqual(['secret-of-a', 'secret-of-b', 'secret-of-b']);
  });

  it('refuses a token the provider rejects with 403 and is unavailable (503) without a secret', async () => {
    const { deps: memory } = memoryStores();
    const provider = givenProvider({ 'secret-of-a': 'token-from-a' });
    const deps = siteVerifyPort.with(memory, provider.verify);
    const a = await givenOrganizationWithCaptcha(deps, 'Org A', 'secret-of-a');
    await expect(verifyCaptcha(deps, { organizationId: a, provider: 'turnstile', token: 'forged' })).rejects.toMatchObject({ status: 403 });
    const none = await createOrganization(deps, { name: 'No Secret' });
    await expect(verifyCaptcha(deps, { organizationId: none.id, provider: 'turnstile', token: 'token-from-a' })).rejects.toMatchObject({ status: 503 });
  });
});
