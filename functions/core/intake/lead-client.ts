/**
 * The client a lead creates, as answered and as stored: its fields (newLeadClient), and the item
 * the clients store puts (clientItem): the client with its `match` key, the request it stands for
 * in the request log, and the team's notification, one item so one write (docs/decisions.md "Lead
 * write cost").
 */
import type { Deps } from '../platform/deps.js';
import { newId, newTimeOrderedId } from '../platform/ids.js';
import { keys, type AuthContext } from '../platform/model.js';
import { matchKeyOf } from '../platform/match-key.js';
import type { Client } from '../platform/crm-fields.js';
import type { ClientItem } from './clients-store.js';
import type { LeadInput } from './lead-schema.js';
import type { RequestMeta } from './merge.js';

/**
 * The client a lead creates, as stored and answered (not written here). The honeypot's fake answer
 * (public-form.ts) is built by the same function, so a bot cannot tell it from a real one.
 */
export function newLeadClient(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta, duplicateOf?: string): Client<'lead', 'api'> {
  const at = new Date(deps.now()).toISOString();
  const { sms_consent_source: consentSource, ...fields } = input;
  return {
    id: newTimeOrderedId('cli', deps.now()), // time-ordered: the inbox reads the newest clients first (notifications.ts)
    organization_id: auth.organization.id,
    status: 'lead',
    source: 'api',
    ...fields,
    ...(input.sms_consent && consentSource
      ? { sms_consent_proof: { source: consentSource, captured_at: at, ip: meta.ip, user_agent: meta.userAgent, key_id: auth.key.keyId } }
      : {}),
    ...(duplicateOf ? { possible_duplicate_of: duplicateOf } : {}),
    submission_count: 1,
    created_at: at,
    updated_at: at,
  };
}

/**
 * What a created client holds of the request that created it, when it stands for that request's
 * row in the request log (docs/settings.md "Request log"): its time is `created_at`. Named as a
 * merged submission's are; never in event payloads (events/public-objects.ts lists what is).
 */
export type RequestRow = { request_id: string; key_id: string; request_status?: number; request_channel?: 'page' | 'form' };
export const rowOf = (auth: AuthContext, meta: RequestMeta): RequestRow => ({
  request_id: meta.requestId, key_id: auth.key.keyId,
  ...(meta.rowStatus !== undefined && meta.rowStatus !== 201 ? { request_status: meta.rowStatus } : {}),
  ...(meta.channel ? { request_channel: meta.channel } : {}),
});

/** The stored item of a new client. */
export function clientItem(client: Client<'lead', 'api'>, row: RequestRow | undefined): ClientItem {
  const name = [client.first_name, client.last_name].filter(Boolean).join(' ');
  const notification = { id: newId('ntf'), type: 'lead.created', title: `New lead: ${name}`, createdAt: client.created_at };
  const matchKey = matchKeyOf(client.organization_id, client);
  return {
    ...keys.client(client.organization_id, client.id),
    entity: 'client',
    ...client,
    ...(matchKey ? { matchKey } : {}),
    ...row,
    // No submission list: the client's own fields and consent proof are its first submission.
    // The team notification is part of the client item: one write, so never one without the other.
    notification,
  };
}
