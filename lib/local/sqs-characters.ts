/**
 * Makes the local SQS (fauxqs) take the message bodies AWS takes (docs/local-stack.md "Differences
 * from AWS", docs/architecture.md#the-local-stack-and-awss-rules). SQS allows #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
 * #x10000 to #x10FFFF (SendMessage's MessageBody); fauxqs tests the body with a pattern written
 * without the `u` flag, which reads UTF-16 units, so every character past U+FFFF (an emoji in a
 * lead's name) is two surrogate units outside its ranges and the message is refused
 * (InvalidMessageContents). A fan-out batch holding such a lead then failed on every retry and was
 * parked in the fan-out failure queue, where AWS would have queued its notice and deliveries.
 *
 * fauxqs keeps that pattern in one exported RegExp that SendMessage and SendMessageBatch call
 * `.test` on; its `test` is given AWS's set, read by code point. Anything else still refused
 * (a lone surrogate, U+FFFE, U+0001 sent raw) is refused as before.
 */

/** A character outside SQS's allowed set, read by code point. */
// eslint-disable-next-line no-control-regex -- SQS names tab, LF and CR among its characters
export const OUTSIDE_SQS_CHARACTERS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Gives fauxqs's body check (its sqsTypes module's INVALID_MESSAGE_BODY_CHAR) AWS's character set. */
export function acceptSqsCharacters(sqsTypes: { INVALID_MESSAGE_BODY_CHAR?: unknown }): void {
  const check = sqsTypes.INVALID_MESSAGE_BODY_CHAR;
  // A fauxqs that no longer has the check (or fixed it) must be looked at again, not patched blindly.
  if (!(check instanceof RegExp)) throw new Error('fauxqs has no INVALID_MESSAGE_BODY_CHAR pattern any more: review lib/local/sqs-characters.ts');
  Object.defineProperty(check, 'test', { value: (body: string) => OUTSIDE_SQS_CHARACTERS.test(body), configurable: true });
}
