/**
 * Every handler is wrapped by `instrumented` (functions/adapters/instrumentation.ts): its log lines carry the
 * Lambda context (function name, request id, cold start flag), and a key one invocation appended is gone
 * in the next.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import { instrumented } from '../../../functions/adapters/instrumentation.js';
import { logger } from '../../../functions/core/platform/observability.js';
import { lambdaContext } from '../../../lib/local/lambda-context.js';

const lines: Record<string, unknown>[] = [];
const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
  for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
  return true;
});
afterEach(() => { lines.length = 0; });

describe('instrumented handlers', () => {
  it('put the Lambda context on every log line, and reset keys between invocations', async () => {
    const handler = instrumented(async (event: { name: string }) => {
      logger.info('working', { name: event.name });
      logger.appendKeys({ organizationId: event.name });
      logger.info('done');
      return event.name;
    });
    const first = lambdaContext('leadIntake');
    expect(await handler({ name: 'a' }, first)).toBe('a');
    const second = lambdaContext('leadIntake');
    await handler({ name: 'b' }, second);
    write.mockRestore();
    const ours = lines.filter((l) => l.message === 'working' || l.message === 'done');
    expect(ours).toHaveLength(4);
    for (const line of ours) expect(line).toMatchObject({ function_name: 'leadIntake', cold_start: expect.any(Boolean), function_request_id: expect.any(String) });
    expect(ours.map((l) => l.function_request_id)).toEqual([first.awsRequestId, first.awsRequestId, second.awsRequestId, second.awsRequestId]);
    // The key the first invocation appended does not leak into the second's first line.
    expect(ours[2].organizationId).toBeUndefined();
    expect(ours[3].organizationId).toBe('b');
  });
});
