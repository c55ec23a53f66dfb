/**
 * What every handler is wrapped in (middy): the Lambda context on every log line (function name,
 * request id, cold start; keys reset between invocations) and, on Lambda, an X-Ray segment for the
 * invocation with its cold start (the SDK calls under it are captured in deps.ts).
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { Context } from 'aws-lambda';
import { logger, tracer } from '../core/platform/observability.js';

export function instrumented<E, R>(handler: (event: E, context: Context) => Promise<R>) {
  return middy<E, R, Error, Context>(handler)
    .use(injectLambdaContext(logger, { resetKeys: true }))
    // Responses stay out of the trace: they hold leads and webhook payloads.
    .use(captureLambdaHandler(tracer, { captureResponse: false }));
}
