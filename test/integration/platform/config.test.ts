/**
 * Settings are read per invocation through the SSM cache, as on Lambda: a changed parameter reaches
 * the running handlers after its max age, and a failing SSM never breaks a container for good.
 * The first test changes the parameter of the suite's stack through its SSM stand-in; the others
 * run a real handler in this process against a stand-in of their own, where failures are injected.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { SSMClient, GetParameterCommand, PutParameterCommand } from '@aws-sdk/client-ssm';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, DynamoDBStreamEvent, Context } from 'aws-lambda';
import { testStack, newTenant, eventually } from '../support/stack.js';
import { startSsmStandIn, type SsmStandIn } from '../../../lib/local/ssm-stand-in.js';
import { settingsParameterEnvVar } from '../../../functions/core/platform/bindings.js';
import { localStackMarkerEnvVar, parseConfig, resetConfigCache, settingsSnapshotEnvVar } from '../../../functions/core/platform/config.js';
import { lambdaDeps } from '../../../functions/core/platform/deps.js';
import { logger } from '../../../functions/core/platform/observability.js';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * A stand-in of the describe block's own, from which this process's handlers read `name` as a
 * deployed function would; every test starts with a cold settings cache and a healthy stand-in.
 */
function useSettingsStandIn(name: string, started: (standIn: SsmStandIn) => void): void {
  const saved = { ...process.env };
  let standIn: SsmStandIn;
  beforeAll(async () => {
    standIn = await startSsmStandIn();
    started(standIn);
    delete process.env.CRM_SETTINGS;
    delete process.env[localStackMarkerEnvVar];
    Object.assign(process.env, { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_ENDPOINT_URL_SSM: standIn.endpoint, [settingsParameterEnvVar]: name });
  });
  afterAll(async () => {
    process.env = { ...saved };
    await standIn.stop();
  });
  beforeEach(() => {
    delete process.env[settingsSnapshotEnvVar];
    resetConfigCache();
    standIn.failWith(undefined);
  });
}

describe('the local stack reads settings from its SSM stand-in', () => {
  it('a PutParameter reaches the running handlers after the max age', async () => {
    const { info, api } = await testStack();
    expect(info.ssmEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ssm = new SSMClient({ region: info.region, endpoint: info.ssmEndpoint, credentials });
    const plan = `probe-${randomUUID().slice(0, 8)}`;
    const tenant = await newTenant({ plan });
    const limit = async () => (await api('/api/webhook/leads', { headers: { 'X-API-Key': tenant.key } })).headers.get('X-RateLimit-Limit');
    expect(await limit()).toBe('100'); // no limit for this plan yet: the default

    const current = JSON.parse((await ssm.send(new GetParameterCommand({ Name: info.settingsParameter }))).Parameter!.Value!);
    expect(current.settingsMaxAgeSeconds).toBe(1);
    const changed = { ...current, planRateLimits: { ...current.planRateLimits, [plan]: 7 } };
    await ssm.send(new PutParameterCommand({ Name: info.settingsParameter, Value: JSON.stringify(changed), Type: 'String', Overwrite: true }));
    await eventually(async () => (await limit()) === '7', { what: 'the new plan limit in X-RateLimit-Limit' });
    ssm.destroy();
  });
});

describe('a handler whose SSM fails', () => {
  const name = '/crm/probe/settings';
  let standIn: SsmStandIn;
  let handler: (event: DynamoDBStreamEvent, context: Context) => Promise<unknown>;
  const invoke = () => handler({ Records: [] }, {} as Context);
  const put = (settings: Record<string, unknown>) => standIn.put(name, JSON.stringify({ settingsMaxAgeSeconds: 1, ...settings }));
  const unavailable = { type: 'InternalServerError', status: 500 };

  useSettingsStandIn(name, (started) => (standIn = started));
  beforeAll(async () => {
    ({ handler } = await import('../../../functions/event-fanout/handler.js'));
  });

  it('retries a transient error within the invocation', async () => {
    put({ pricePerCallMicros: 1111 });
    standIn.failWith(unavailable, 1);
    const before = standIn.requests;
    await expect(invoke()).resolves.toEqual({ batchItemFailures: [] });
    expect(standIn.requests - before).toBe(2);
  });

  it('fails the invocation while SSM is down on a cold start, and the next one succeeds once it is back', async () => {
    put({ pricePerCallMicros: 2222 });
    standIn.failWith(unavailable);
    await expect(invoke()).rejects.toThrow();
    standIn.failWith(undefined);
    await expect(invoke()).resolves.toEqual({ batchItemFailures: [] });
    expect((await lambdaDeps()).config.pricePerCallMicros).toBe(2222);
  });

  it('serves the previous settings while SSM is down, then picks up the new value', async () => {
    put({ pricePerCallMicros: 3333 });
    expect((await lambdaDeps()).config.pricePerCallMicros).toBe(3333);
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    put({ pricePerCallMicros: 4444 });
    standIn.failWith(unavailable);
    const failedReads = standIn.requests;
    // Past the max age the read fails: every invocation still succeeds on the previous value.
    await eventually(async () => (await invoke()) && standIn.requests > failedReads, { what: 'a failed read after the max age' });
    expect((await lambdaDeps()).config.pricePerCallMicros).toBe(3333);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/serving the previous value/), expect.anything());
    standIn.failWith(undefined);
    await eventually(async () => (await lambdaDeps()).config.pricePerCallMicros === 4444, { what: 'the new value after SSM recovered' });
    warn.mockRestore();
  });

  it('never enables local mode from settings read on Lambda', async () => {
    put({ local: true });
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Crm-prod-eventFanout';
    try {
      expect((await lambdaDeps()).config.local).toBe(false);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/"local": true ignored/));
      // The local stack (which sets its marker) is the one place it takes effect.
      resetConfigCache();
      process.env[localStackMarkerEnvVar] = '1';
      expect((await lambdaDeps()).config.local).toBe(true);
    } finally {
      delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      delete process.env[localStackMarkerEnvVar];
      warn.mockRestore();
    }
  });
});

describe('settings under SSM pressure (GetParameter: 40 TPS per account and region, shared by every cold container)', () => {
  const name = '/crm/pressure/settings';
  let standIn: SsmStandIn;
  const put = (settings: Record<string, unknown>) => standIn.put(name, JSON.stringify(settings));
  const throttled = { type: 'ThrottlingException', status: 400, message: 'Rate exceeded' };
  const unavailable = { type: 'InternalServerError', status: 500 };

  useSettingsStandIn(name, (started) => (standIn = started));

  it('keeps trying a cold read through five failed answers (six attempts)', async () => {
    put({ pricePerCallMicros: 1212 });
    standIn.failWith(unavailable, 5);
    const before = standIn.requests;
    expect((await lambdaDeps()).config.pricePerCallMicros).toBe(1212);
    expect(standIn.requests - before).toBe(6);
  });

  it('serves the deploy-time snapshot when SSM throttles a cold start (with a warning), then SSM again once it answers', async () => {
    put({ pricePerCallMicros: 3434, settingsMaxAgeSeconds: 1 });
    process.env[settingsSnapshotEnvVar] = JSON.stringify({ pricePerCallMicros: 2323, settingsMaxAgeSeconds: 1 });
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    try {
      standIn.failWith(throttled);
      expect((await lambdaDeps()).config.pricePerCallMicros).toBe(2323);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/deploy-time snapshot/), expect.objectContaining({ parameter: name }));
      standIn.failWith(undefined);
      await eventually(async () => (await lambdaDeps()).config.pricePerCallMicros === 3434, { what: 'the parameter after SSM recovered' });
    } finally {
      warn.mockRestore();
    }
  });

  it('answers an API request 503 problem+json with Retry-After when a cold container has no settings at all', async () => {
    put({});
    standIn.failWith(unavailable);
    const { handler } = await import('../../../functions/lead-intake/handler.js');
    const event = { httpMethod: 'GET', path: '/api/webhook/leads', resource: '/api/webhook/leads', headers: {}, requestContext: { requestId: 'req-ssm-down' } } as unknown as APIGatewayProxyEvent;
    const error = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    try {
      const result = await (handler as unknown as (e: APIGatewayProxyEvent, c: Context) => Promise<APIGatewayProxyResult>)(event, { awsRequestId: 'aws-req' } as Context);
      expect(result.statusCode).toBe(503);
      expect(result.headers).toMatchObject({ 'Content-Type': 'application/problem+json', 'Retry-After': expect.stringMatching(/^\d+$/), 'X-Request-Id': 'req-ssm-down' });
      expect(JSON.parse(result.body)).toMatchObject({ status: 503, request_id: 'req-ssm-down' });
    } finally {
      error.mockRestore();
    }
  });

  it('refreshes each container after a random 70-100 % of the max age, so containers born together do not read SSM together', async () => {
    const start = Date.now();
    jest.useFakeTimers({ now: start, doNotFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'nextTick', 'queueMicrotask', 'hrtime', 'performance'] });
    const random = jest.spyOn(Math, 'random').mockReturnValue(0); // this container draws the shortest age: 70 %
    try {
      put({ pricePerCallMicros: 5656, settingsMaxAgeSeconds: 100 });
      resetConfigCache();
      expect((await lambdaDeps()).config.pricePerCallMicros).toBe(5656);
      put({ pricePerCallMicros: 6767, settingsMaxAgeSeconds: 100 });
      jest.setSystemTime(start + 69_000);
      expect((await lambdaDeps()).config.pricePerCallMicros).toBe(5656);
      jest.setSystemTime(start + 71_000);
      expect((await lambdaDeps()).config.pricePerCallMicros).toBe(6767);
    } finally {
      random.mockRestore();
      jest.useRealTimers();
    }
  });

  it('drops allow-list entries over loopback or cloud metadata from settings read on Lambda, with a warning', async () => {
    put({ ssrfAllowList: ['127.0.0.0/8', '10.20.0.0/16', '169.254.0.0/16', 'fd00:ec2::254'] });
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Crm-prod-webhookDelivery';
    try {
      expect((await lambdaDeps()).config.ssrfAllowList).toEqual(['10.20.0.0/16']);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/"169\.254\.0\.0\/16" ignored: it overlaps link-local/));
    } finally {
      delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      warn.mockRestore();
    }
  });
});

describe('settings that time security controls are bounded', () => {
  it('refuses keyCacheTtlSeconds or endpointCacheTtlSeconds over 300 s and settingsMaxAgeSeconds over 3600 s, naming the field', () => {
    const bounds = { keyCacheTtlSeconds: 300, endpointCacheTtlSeconds: 300, settingsMaxAgeSeconds: 3600 };
    for (const [field, max] of Object.entries(bounds)) {
      expect(parseConfig({ [field]: max })[field as keyof typeof bounds]).toBe(max);
      expect(() => parseConfig({ [field]: max + 1 })).toThrow(new RegExp(`${field} must be at most ${max}`));
    }
  });
});
