/**
 * The bulk fan-out's edge (functions/bulk-fanout/sqs-batch.ts): a message it cannot record is a
 * partial batch failure, not a function error, so it counts `BulkSharesFailed` (the page that sees
 * it: docs/deploy.md "Alarms"). A refused body needs no table or queue, so none is given.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import type { SQSRecord } from 'aws-lambda';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { fanOutBulkBatch } from '../../../functions/bulk-fanout/sqs-batch.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';

const noDeps = { now: () => Date.now() } as Deps; // any table or queue access would throw
const record = (messageId: string, body: string) => ({ messageId, body }) as SQSRecord;

afterEach(() => {
  jest.restoreAllMocks();
});

describe('the bulk fan-out batch', () => {
  it('reports a message that is no bulk share as failed and counts it in BulkSharesFailed, once per message', async () => {
    const addMetric = jest.spyOn(metrics, 'addMetric');
    jest.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    const result = await fanOutBulkBatch(noDeps, [record('m1', '{"x":1}'), record('m2', 'not json')]);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(addMetric.mock.calls.filter(([name]) => name === 'BulkSharesFailed')).toEqual([['BulkSharesFailed', 'Count', 1], ['BulkSharesFailed', 'Count', 1]]);
  });

  it('counts nothing for an empty batch', async () => {
    const addMetric = jest.spyOn(metrics, 'addMetric');
    jest.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
    expect(await fanOutBulkBatch(noDeps, [])).toEqual({ batchItemFailures: [] });
    expect(addMetric).not.toHaveBeenCalledWith('BulkSharesFailed', expect.anything(), expect.anything());
  });
});
