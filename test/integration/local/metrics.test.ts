/**
 * Metrics are flushed on every invocation: a rate limiter that fails open during an HTTP request
 * leaves a RateLimitFailOpen EMF line on stdout (what CloudWatch turns into the metric the alarm
 * watches). The local stack runs with metrics disabled, so the real lead-intake handler runs here,
 * in this process, with metrics on and Lambda's environment pointing at the suite's emulators;
 * the rate-limit table is bound to a table that does not exist, the limiter's real outage mode.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { testStack, newTenant } from '../support/stack.js';
import { tables, queues, settingsParameterEnvVar, metricsNamespace, type TableName, type QueueName } from '../../../lib/topology.js';
import { lambdaContext } from '../../../lib/local/lambda-context.js';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

describe('metrics of lead intake', () => {
  const saved = { ...process.env };
  let handler: Handler;

  beforeAll(async () => {
    const { info } = await testStack();
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    delete process.env.CRM_SETTINGS;
    Object.assign(process.env, {
      AWS_REGION: info.region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: info.dynamodbEndpoint,
      AWS_ENDPOINT_URL_SQS: info.sqsEndpoint,
      AWS_ENDPOINT_URL_SSM: info.ssmEndpoint,
      [settingsParameterEnvVar]: info.settingsParameter,
    });
    for (const [name, spec] of Object.entries(tables)) process.env[spec.envVar] = info.tables[name as TableName];
    for (const [name, spec] of Object.entries(queues)) process.env[spec.envVar] = info.queues[name as QueueName];
    process.env[tables.rateWindows.envVar] = `missing-${randomUUID()}`;
    ({ handler } = (await import('../../../functions/lead-intake/handler.js')) as { handler: Handler });
  });
  afterAll(() => {
    process.env = { ...saved };
  });

  it('publishes RateLimitFailOpen when the limiter fails open during a request', async () => {
    const tenant = await newTenant();
    const lines: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    });
    let result: APIGatewayProxyResult;
    try {
      result = await handler({
        resource: '/api/webhook/leads',
        path: '/api/webhook/leads',
        httpMethod: 'GET',
        headers: { 'X-API-Key': tenant.key },
        multiValueHeaders: { 'X-API-Key': [tenant.key] },
        queryStringParameters: null,
        multiValueQueryStringParameters: null,
        pathParameters: null,
        stageVariables: null,
        body: null,
        isBase64Encoded: false,
        requestContext: { requestId: randomUUID(), identity: { sourceIp: '127.0.0.1' } } as APIGatewayProxyEvent['requestContext'],
      }, lambdaContext('leadIntake', 10));
    } finally {
      write.mockRestore();
    }
    expect(result.statusCode).toBe(200); // failed open: admitted

    const emf = lines.map((l) => { try { return JSON.parse(l); } catch { return undefined; } }).filter((o) => o?._aws?.CloudWatchMetrics);
    const failOpen = emf.find((o) => o.RateLimitFailOpen !== undefined);
    expect(failOpen).toBeDefined();
    expect(failOpen.RateLimitFailOpen).toBe(1);
    expect(failOpen._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: metricsNamespace, Dimensions: [['service']], Metrics: [expect.objectContaining({ Name: 'RateLimitFailOpen' })] });
  });
});
