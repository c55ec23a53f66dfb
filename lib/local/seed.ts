/**
 * The demo organization and key `npm start` prints. Keys are stored hashed, so the demo key is kept
 * in <dir>/demo.json (mode 0600) to be shown again on the next start.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Deps } from '../../functions/core/platform/deps.js';
import { createOrganization, getOrganization } from '../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../functions/core/tenancy/api-keys.js';

export interface Demo { organizationId: string; apiKey: string }

export async function seedDemo(deps: Deps, options: { dir: string }): Promise<Demo> {
  const file = path.join(options.dir, 'demo.json');
  if (existsSync(file)) {
    const demo = JSON.parse(readFileSync(file, 'utf8')) as Demo;
    if (await getOrganization(deps, demo.organizationId)) return demo;
  }
  const org = await createOrganization(deps, { name: 'Demo Plumbing', plan: 'pro', billing: 'prepaid', walletMicros: 25_000_000 });
  const { key } = await createApiKey(deps, org.id, 'demo');
  const demo = { organizationId: org.id, apiKey: key };
  writeFileSync(file, JSON.stringify(demo, null, 2) + '\n', { mode: 0o600 });
  return demo;
}
