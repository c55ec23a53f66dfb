/** An organization with one webhook endpoint at a test receiver, in the suite's DynamoDB Local (endpoints are not the delivery record's). */
import type { Deps } from '../../../../functions/core/platform/deps.js';
import type { WebhookEndpoint } from '../../../../functions/core/platform/model.js';
import { createOrganization } from '../../../../functions/core/tenancy/organizations.js';
import { addEndpoint, getEndpoint, updateEndpoint } from '../../../../functions/core/delivery/endpoints.js';
import type { Receiver } from '../../support/receiver.js';

export interface CoreTenant { organizationId: string; endpoint: WebhookEndpoint; secret: string }

/** `url(secret)`: where the endpoint points, once its signing secret is known. */
export async function tenantAt(deps: Deps, name: string, url: (secret: string) => string): Promise<CoreTenant> {
  const org = await createOrganization(deps, { name });
  const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/placeholder', events: 'all' });
  await updateEndpoint(deps, org.id, endpoint.id, { url: url(secret) });
  return { organizationId: org.id, endpoint: (await getEndpoint(deps, org.id, endpoint.id))!, secret };
}

/** A tenant whose endpoint answers as `receiver` scripts `path`. */
export const tenantWithScript = (deps: Deps, receiver: Receiver, path: string, ...script: Parameters<Receiver['script']>[2][]) =>
  tenantAt(deps, `Core ${path}`, (secret) => receiver.script(path, secret, ...script));
