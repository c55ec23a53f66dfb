/**
 * What every handler is wrapped in (middy): the Lambda context on every log line (function name,
 * request id, cold start; keys reset between invocations) and, on Lambda, an X-Ray segment for the
 * invocation with its cold start (functions/core/platform/tracing.ts; the SDK calls under it are captured in deps.ts).
 */
import middy, { type MiddlewareObj, type Request } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { logger } from '../core/platform/observability.js';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { loadTracer } from '../core/platform/tracing.js';

export function instrumented<E, R>(handler: (event: E, context: Context) => Promise<R>) {
  return middy<E, R, Error, Context>(handler)
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(tracedInvocation());
}

type Middleware = MiddlewareObj<unknown, unknown, Error>;
/**
 * An X-Ray segment per invocation with its cold start, on Lambda only. Responses stay out of the
 * trace: they hold leads and webhook payloads.
 */
function tracedInvocation(): Middleware {
  let inner: Promise<Middleware | undefined> | undefined;
  const middleware = () => (inner ??= loadTracer().then((tracer) => tracer && (captureLambdaHandler(tracer, { captureResponse: false }) as Middleware)));
  const step = (name: 'before' | 'after' | 'onError') => async (request: Request) => {
    await (await middleware())?.[name]?.(request);
  };
  return { before: step('before'), after: step('after'), onError: step('onError') };
}
