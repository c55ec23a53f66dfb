/**
 * Metrics are flushed on every invocation: a rate limiter that fails open during an HTTP request
 * leaves a RateLimitFailOpen EMF line on stdout (what CloudWatch turns into the metric the alarm
 * watches). The local stack runs with metrics disabled, so the real lead-intake handler runs here,
 * in this process, with metrics on and Lambda's environment pointing at the suite's emulators;
 * the rate-limit table is bound to a table that does not exist, the limiter's real outage mode.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack, newTenant } from '../support/stack.js';
import { importLeadIntake, invokeLeadIntake, useStackEnvironment, type LeadIntakeHandler } from '../support/in-process-lambda.js';
import { tables } from '../../../lib/topology.js';
import { metricsNamespace } from '../../../functions/core/platform/bindings.js';

describe('metrics of lead intake', () => {
  const saved = { ...process.env };
  let handler: LeadIntakeHandler;

  beforeAll(async () => {
    const { info } = await testStack();
    useStackEnvironment(info);
    process.env[tables.rateWindows.envVar] = `missing-${randomUUID()}`;
    handler = await importLeadIntake();
  });
  afterAll(() => {
    process.env = { ...saved };
  });

  it('publishes RateLimitFailOpen when the limiter fails open during a request', async () => {
    const tenant = await newTenant();
    const { result, json } = await invokeLeadIntake(handler, { method: 'GET', headers: { 'X-API-Key': tenant.key }, sourceIp: '127.0.0.1' });
    expect(result.statusCode).toBe(200); // failed open: admitted

    const emf = json.filter((o) => o._aws?.CloudWatchMetrics);
    const failOpen = emf.find((o) => o.RateLimitFailOpen !== undefined);
    expect(failOpen).toBeDefined();
    expect(failOpen!.RateLimitFailOpen).toBe(1);
    expect(failOpen!._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: metricsNamespace, Dimensions: [['service']], Metrics: [expect.objectContaining({ Name: 'RateLimitFailOpen' })] });
  });
});
