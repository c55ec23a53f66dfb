/**
 * Makes the local SQS (fauxqs) as strict as AWS where it is kinder (docs/architecture.md#the-local-stack-and-awss-rules): SQS counts the
 * 12 h visibility maximum from the message's RECEIVE, so ChangeMessageVisibility(handle, t) is
 * refused when (time since that receive) + t > 43 200 s; fauxqs only checks 0 <= t <= 43 200.
 *
 * Two fastify hooks on the fauxqs app: onSend remembers when each receipt handle was handed out by
 * ReceiveMessage; preHandler answers a ChangeMessageVisibility past the limit with AWS's error
 * (400 InvalidParameterValue), and fails only the offending entries of a batch, as AWS does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const MAX_VISIBILITY_MS = 43_200_000;
const TARGET = 'x-amz-target';

interface Entry { Id?: string; ReceiptHandle?: string; VisibilityTimeout?: number }
type Refusal = { Id?: string; SenderFault: true; Code: string; Message: string };

const tooLong = (seconds: unknown) =>
  `Value ${String(seconds)} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]`;

export function enforceVisibilityLimit(app: FastifyInstance, now: () => number = Date.now): void {
  /** Receipt handle → when ReceiveMessage returned it (a new receive means a new handle). */
  const receivedAt = new Map<string, number>();
  const exceeds = (entry: Entry) => {
    const at = entry.ReceiptHandle === undefined ? undefined : receivedAt.get(entry.ReceiptHandle);
    return at !== undefined && typeof entry.VisibilityTimeout === 'number' && now() - at + entry.VisibilityTimeout * 1000 > MAX_VISIBILITY_MS;
  };
  const refusals = new WeakMap<FastifyRequest, Refusal[]>();

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const action = request.headers[TARGET];
    const body = request.body as { Entries?: Entry[] } & Entry;
    if (action === 'AmazonSQS.ChangeMessageVisibility' && exceeds(body)) {
      return reply.code(400)
        .header('content-type', 'application/x-amz-json-1.0')
        .header('x-amzn-query-error', 'InvalidParameterValue;Sender') // AWS's code for it: the SDK names the error from this header
        .send({ __type: 'com.amazonaws.sqs#InvalidParameterValue', message: tooLong(body.VisibilityTimeout) });
    }
    if (action === 'AmazonSQS.ChangeMessageVisibilityBatch' && Array.isArray(body.Entries)) {
      const refused = body.Entries.filter(exceeds);
      if (refused.length === 0) return;
      const failed = refused.map((e): Refusal => ({ Id: e.Id, SenderFault: true, Code: 'InvalidParameterValue', Message: tooLong(e.VisibilityTimeout) }));
      body.Entries = body.Entries.filter((e) => !refused.includes(e));
      // fauxqs rejects an empty batch, so answer an all-refused batch here.
      if (body.Entries.length === 0) return reply.header('content-type', 'application/x-amz-json-1.0').send({ Successful: [], Failed: failed });
      refusals.set(request, failed);
    }
  });

  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const action = request.headers[TARGET];
    if (reply.statusCode !== 200 || typeof payload !== 'string') return payload;
    if (action === 'AmazonSQS.ReceiveMessage') {
      const at = now();
      for (const m of (JSON.parse(payload) as { Messages?: { ReceiptHandle?: string }[] }).Messages ?? []) {
        if (m.ReceiptHandle) receivedAt.set(m.ReceiptHandle, at);
      }
      // A handle older than 12 h can no longer be re-timed at all; forget it.
      for (const [handle, t] of receivedAt) if (at - t > MAX_VISIBILITY_MS) receivedAt.delete(handle);
      return payload;
    }
    const failed = refusals.get(request);
    if (action === 'AmazonSQS.ChangeMessageVisibilityBatch' && failed) {
      const out = JSON.parse(payload) as { Successful?: unknown[]; Failed?: Refusal[] };
      return JSON.stringify({ ...out, Failed: [...(out.Failed ?? []), ...failed] });
    }
    return payload;
  });
}
