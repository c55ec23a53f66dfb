/**
 * The Powertools Tracer (X-Ray), loaded only on a deployed Lambda. Its X-Ray SDK installs a
 * process-wide async_hooks hook when imported, which slows every promise; the local stack, the CLI
 * and jest never import it (docs/decisions.md, "Tracer only on Lambda").
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { serviceName } from './bindings.js';
import { onDeployedLambda } from './runtime.js';

let loading: Promise<Tracer | undefined> | undefined;
/** The container's tracer on Lambda; undefined everywhere else. */
export function loadTracer(): Promise<Tracer | undefined> {
  loading ??= onDeployedLambda()
    ? import('@aws-lambda-powertools/tracer').then(({ Tracer }) => new Tracer({ serviceName, captureHTTPsRequests: false }))
    : Promise.resolve(undefined);
  return loading;
}

/** `client` with each SDK call an X-Ray subsegment on Lambda (which table, queue or parameter call was slow); unchanged elsewhere. */
export async function traced<C>(client: C): Promise<C> {
  const tracer = await loadTracer();
  return tracer ? tracer.captureAWSv3Client(client) : client;
}
