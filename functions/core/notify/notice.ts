/**
 * What a notice is (docs/notifications.md): the message on the notices queue, shared by the code
 * that decides a person should be told (producers: a new lead, a paused endpoint, the daily
 * digest) and the mailer that tells each confirmed recipient who asked for that notice.
 *
 * Producers never send mail and never wait for a mail server: they enqueue a NoticeMessage
 * (enqueueNotice), and a lead's 201 never depends on it. The mailer renders each message per
 * recipient (composeNotice), sends it once per (key, recipient), retries through the queue and
 * parks what keeps failing in the notices dead-letter queue.
 */

/** The notices a recipient can pick (the settings API's `notices` values). */
export const NOTICE_KINDS = ['lead.created', 'endpoint.paused', 'endpoint.disabled', 'daily_digest'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/**
 * Kinds that ride along with a picked kind: `lead.returning` (a merge into an existing client) and
 * `lead.summary` (leads folded past the organization's cap) go to whoever picked `lead.created`.
 */
export type MessageKind = NoticeKind | 'lead.returning' | 'lead.summary';

export interface NoticeMessage {
  organizationId: string;
  kind: MessageKind;
  /**
   * What makes this notice one notice: the mailer sends each (key, recipient) at most once, so a
   * stream retry, a double-submit or a redelivered message sends nothing twice. For a lead, derived
   * from the client id (and its submission for a returning lead); for a paused endpoint, from the
   * endpoint id and the time its circuit opened; for a digest, from the organization and the day.
   */
  key: string;
  /** ISO time the producer saw the fact (shown in the notice). */
  at: string;
  /** Not sent before this ISO time (a queue delay, at most 900 s): a leads summary waits for its window's end. */
  notBefore?: string;
  /** The facts the notice shows, by kind (untrusted where they come from a lead: compose escapes). */
  data: Record<string, unknown>;
}
