/**
 * Through the local stack (front door, HTTP adapter, session token, the settings function): every
 * settings route that takes a body or a query, as the generated OpenAPI document lists them,
 * answers its smallest documented request plus one undocumented field with the documented 422,
 * problem+json naming the field. The request never reaches the domain: the ids in the path are
 * made up, and nothing of the organization changes.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant } from '../support/stack.js';
import { settingsClient, settingsCall } from './support.js';
import { documentedRequests, exampleOf, exampleQuery, UNDOCUMENTED } from '../../support/documented-requests.js';

describe('an undocumented field', () => {
  it('is the documented 422 naming it, on each settings route that takes a body or a query', async () => {
    const { organizationId } = await newTenant({ name: 'Undocumented' });
    const admin = await settingsClient(organizationId);
    const state = async () => [(await admin.get('/api/settings/keys')).json(), (await admin.get('/api/settings/webhooks')).json(), (await admin.get('/api/settings')).json()];
    const before = await state();
    const requests = documentedRequests();
    expect(requests.length).toBeGreaterThanOrEqual(12);
    for (const r of requests) {
      const pathname = r.path.replace('{id}', 'id_made_up');
      const query = new URLSearchParams(exampleQuery(r.query));
      const body = r.body ? { ...(exampleOf(r.body) as object), [UNDOCUMENTED]: 1 } : undefined;
      if (!r.body) query.set(UNDOCUMENTED, '1');
      const call = await settingsCall(admin.token, r.method, `${pathname}${query.size ? `?${query}` : ''}`, body);
      expect({ route: r.route, status: call.status, type: call.headers.get('content-type') }).toEqual({ route: r.route, status: 422, type: 'application/problem+json' });
      expect(Object.keys(r.operation.responses)).toContain('422');
      expect(call.json()).toMatchObject({ status: 422, errors: [{ field: UNDOCUMENTED, message: 'is not a field of this request' }] });
    }
    expect(await state()).toEqual(before);
  });
});
