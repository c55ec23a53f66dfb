/**
 * The real lead-intake handler run in the test's own process, as Lambda runs it, to see what the
 * local stack keeps quiet (it runs with metrics disabled): its EMF metric lines and its request log
 * on stdout.
 */
import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { tables, queues, type TableName, type QueueName } from '../../../lib/topology.js';
import { settingsParameterEnvVar } from '../../../functions/core/platform/bindings.js';
import type { LocalStackInfo } from '../../../lib/local/stack-file.js';
import { lambdaContext } from '../../../lib/local/lambda-context.js';

export type LeadIntakeHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/**
 * Points this process's environment at the suite's emulators, with metrics on (the caller saves
 * and restores process.env).
 */
export function useStackEnvironment(info: LocalStackInfo): void {
  delete process.env.POWERTOOLS_METRICS_DISABLED;
  delete process.env.CRM_SETTINGS;
  Object.assign(process.env, {
    AWS_REGION: info.region, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: info.dynamodbEndpoint, AWS_ENDPOINT_URL_SQS: info.sqsEndpoint, AWS_ENDPOINT_URL_SSM: info.ssmEndpoint,
    [settingsParameterEnvVar]: info.settingsParameter,
  });
  for (const [name, spec] of Object.entries(tables)) process.env[spec.envVar] = info.tables[name as TableName];
  for (const [name, spec] of Object.entries(queues)) process.env[spec.envVar] = info.queues[name as QueueName];
}

export async function importLeadIntake(): Promise<LeadIntakeHandler> {
  return ((await import('../../../functions/lead-intake/handler.js')) as { handler: LeadIntakeHandler }).handler;
}

/** Invokes `handler` with API Gateway's event for a request to the lead endpoint; returns its answer and the JSON lines it wrote. */
export async function invokeLeadIntake(
  handler: LeadIntakeHandler,
  request: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; sourceIp: string },
): Promise<{ result: APIGatewayProxyResult; lines: string[]; json: Record<string, any>[] }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const lines: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  let result: APIGatewayProxyResult;
  try {
    result = await handler({
      resource: '/api/webhook/leads', path: '/api/webhook/leads', httpMethod: request.method, headers: request.headers,
      multiValueHeaders: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, [v]])),
      queryStringParameters: null, multiValueQueryStringParameters: null, pathParameters: null, stageVariables: null,
      body: request.body ?? null, isBase64Encoded: false,
      requestContext: { requestId: randomUUID(), identity: { sourceIp: request.sourceIp } } as APIGatewayProxyEvent['requestContext'],
    }, lambdaContext('leadIntake', 10));
  } finally {
    write.mockRestore();
  }
  const json = lines.map((l) => { try { return JSON.parse(l); } catch { return undefined; } }).filter((o) => o !== undefined);
  return { result, lines, json };
}
