/** `items` in consecutive groups of at most `size`: AWS batch APIs take 10 (SQS) or 100 (BatchGetItem) per call. */
export function inBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size));
  return batches;
}

/** SendMessageBatch takes at most 10 messages and 256 KiB of bodies (with attributes) in all (BatchRequestTooLong). */
const MAX_SQS_BATCH_BYTES = 256 * 1024;

/** `items` in consecutive SendMessageBatch groups: at most 10 each, and their `bytesOf` within the batch payload limit. */
export function inSqsBatches<T>(items: readonly T[], bytesOf: (item: T) => number): T[][] {
  const batches: T[][] = [];
  let size = 0;
  for (const item of items) {
    const bytes = bytesOf(item) + 64; // + the entry's id and attributes
    const last = batches.at(-1);
    if (!last || last.length >= 10 || size + bytes > MAX_SQS_BATCH_BYTES) {
      batches.push([item]);
      size = bytes;
    } else {
      last.push(item);
      size += bytes;
    }
  }
  return batches;
}

/**
 * A message's JSON body as SQS takes it. SQS refuses a body holding a character outside #x9 | #xA |
 * #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF (InvalidMessageContents); JSON.stringify
 * already escapes control characters and lone surrogates, and the two noncharacters left, U+FFFE
 * and U+FFFF (valid UTF-8, so a lead may hold them), are escaped here: the body parses to the same
 * value, and a record holding one never fails, and parks, the batch that queues it.
 */
export const sqsMessageBody = (value: unknown): string =>
  JSON.stringify(value).replace(/[\uFFFE\uFFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
