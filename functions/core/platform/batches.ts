/** `items` in consecutive groups of at most `size`: AWS batch APIs take 10 (SQS) or 100 (BatchGetItem) per call. */
export function inBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size));
  return batches;
}
