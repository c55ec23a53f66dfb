import type { Deps } from '../../functions/core/clients.js';

/** Creates the demo organization and API key on first start (filled in by the keys work). */
export async function seedDemo(_deps: Deps, _options: { dir: string }): Promise<{ organizationId: string; apiKey: string } | undefined> {
  return undefined;
}
