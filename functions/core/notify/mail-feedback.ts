/**
 * SES's word on what it sent (docs/notifications.md "Bounces and complaints"): the configuration
 * set's bounce and complaint events, delivered by EventBridge to the mail feedback queue. A
 * permanent bounce or a complaint suppresses the address for the organization the message was sent
 * for (its `organization` tag, notify/mail-transport.ts); a transient bounce changes nothing (SES
 * retried already; the next notice tries again).
 */
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { normalizeAddress, suppressRecipient } from './recipients.js';
import type { SuppressedReason } from './recipient-store.js';

interface SesEvent {
  eventType?: string;
  notificationType?: string;
  bounce?: { bounceType?: string; bouncedRecipients?: { emailAddress?: string }[] };
  complaint?: { complainedRecipients?: { emailAddress?: string }[] };
  mail?: { tags?: Record<string, string[]> };
}

export interface Suppression { organizationId: string; email: string; reason: SuppressedReason }

/**
 * The suppressions an SES event asks for: the body of an EventBridge event (`detail`), or of an SNS
 * notification (`Message`, should the destination be a topic). Anything else asks for none.
 */
export function suppressionsOf(body: string): Suppression[] {
  let parsed: { detail?: SesEvent; Message?: string } & SesEvent;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const event: SesEvent = parsed.detail ?? (typeof parsed.Message === 'string' ? JSON.parse(parsed.Message) : parsed);
  const type = event.eventType ?? event.notificationType;
  const organizationId = event.mail?.tags?.organization?.[0];
  if (!organizationId) return [];
  const addresses = type === 'Bounce' && event.bounce?.bounceType === 'Permanent' ? event.bounce.bouncedRecipients
    : type === 'Complaint' ? event.complaint?.complainedRecipients : undefined;
  const reason: SuppressedReason = type === 'Bounce' ? 'bounced' : 'complained';
  return (addresses ?? []).flatMap((r) => {
    const email = r.emailAddress && normalizeAddress(r.emailAddress.replace(/^.*<([^>]+)>.*$/, '$1'));
    return email ? [{ organizationId, email, reason }] : [];
  });
}

/** Records an SES event's suppressions. */
export async function recordMailFeedback(deps: Deps, body: string): Promise<Suppression[]> {
  const suppressions = suppressionsOf(body);
  for (const s of suppressions) {
    const done = await suppressRecipient(deps, s.organizationId, s.email, s.reason);
    logger.info('mail feedback: address suppressed', { organizationId: s.organizationId, reason: s.reason, recorded: done });
  }
  return suppressions;
}
