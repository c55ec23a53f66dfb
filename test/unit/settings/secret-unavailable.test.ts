/**
 * The settings API when Secrets Manager cannot give the session-token secret (throttled, down):
 * a 503 problem with Retry-After that the page may retry, not a 500; a request without a token is
 * still the 401 it always is, without reading the secret at all.
 */
import { describe, it, expect } from '@jest/globals';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { toProblem } from '../../../functions/core/platform/errors.js';
import type { HttpOutcome, HttpRequest } from '../../../functions/core/platform/http-request.js';
import { SECRET_RETRY_AFTER_SECONDS, settingsApi } from '../../../functions/core/settings/handle-settings-request.js';

const deps = { now: () => Date.now() } as unknown as Deps;
const request = (headers: Record<string, string>): HttpRequest => ({ method: 'GET', headers, body: undefined, requestId: 'req-1', resource: '/api/settings', pathParameters: {}, query: {} });
const problemOf = (outcome: HttpOutcome) => {
  expect(outcome).toHaveProperty('error');
  return { ...toProblem((outcome as { error: unknown }).error), outcomeHeaders: outcome.headers };
};

describe('settings API without its secret', () => {
  it('answers 503 with Retry-After (no-store) when the secret cannot be read', async () => {
    let reads = 0;
    const route = settingsApi({ tokenSecret: () => { reads++; return Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })); } });
    const { problem, headers, outcomeHeaders } = problemOf(await route(deps, request({ authorization: 'Bearer aaa.bbb.ccc' })));
    expect(problem).toMatchObject({ status: 503, type: expect.stringContaining('service-unavailable') });
    expect(problem.detail).not.toContain('Rate exceeded');
    expect(headers['Retry-After']).toBe(String(SECRET_RETRY_AFTER_SECONDS));
    expect(outcomeHeaders['Cache-Control']).toBe('no-store');
    expect(reads).toBe(1);

    expect(problemOf(await route(deps, request({}))).problem.status).toBe(401);
    expect(problemOf(await route(deps, request({ 'x-api-key': 'crm_live_x' }))).problem.status).toBe(401);
    expect(reads).toBe(1);
  });
});
