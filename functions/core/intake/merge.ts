/**
 * A lead's submission as a client keeps it, and the merge of a later one into the earlier client
 * it matches (docs/leads.md "Duplicates"). Both are bounded in bytes, so a client can never grow
 * near DynamoDB's 400 KB item limit and a merge's write cost stays bounded (docs/data-model.md).
 */
import { newId } from '../platform/ids.js';
import { clipBytes } from '../platform/text.js';
import type { AuthContext } from '../platform/model.js';
import type { MergedSubmission } from './clients-store.js';
import type { LeadInput } from './lead-schema.js';

export type { MergeResult } from './clients-store.js';

export interface RequestMeta {
  requestId: string; ip?: string; userAgent?: string;
  /**
   * The status the request is answered when it creates a client (absent: 201; a no-script form post
   * redirected to its thank-you page: 303). The client is its request's row in the request log
   * (`request_id`, `key_id`, `request_status` when not 201; docs/settings.md "Request log").
   */
  rowStatus?: number;
  /**
   * Where a publishable key's lead came from: a page's script (`page`) or a no-script form post
   * (`form`); absent for the lead endpoint's secret keys. Kept on the client it creates
   * (`request_channel`) for the leads statistics (docs/settings.md "Statistics").
   */
  channel?: 'page' | 'form';
}

/** Later submissions listed on a client; past them a lead is not merged but created, flagged. */
export const MAX_LISTED_SUBMISSIONS = 20;
/** Byte bounds of what a submission copies (UTF-8, cut on a character): with ids and times, under 1 KiB each. */
const BOUNDS = { user_agent: 200, sms_consent_source: 200, service: 200, notes: 300 } as const;

/** The request's meta as stored: the User-Agent bounded (it is copied into consent proofs and submissions). */
export const boundedMeta = (meta: RequestMeta): RequestMeta => ({ ...meta, ...(meta.userAgent ? { userAgent: clipBytes(meta.userAgent, BOUNDS.user_agent) } : {}) });

/**
 * One later submission as the client lists it: where, when and from whom, with its consent and what
 * the person asked for (bounded). Never sent to receivers. Its consent is its own proof: a merge
 * never changes the client's consent or its proof.
 */
export interface Submission {
  at: string; source: 'api'; key_id: string; request_id: string; ip?: string; user_agent?: string;
  sms_consent: boolean; sms_consent_source?: string; service?: string; notes?: string;
}

export function submissionOf(auth: AuthContext, input: LeadInput, meta: RequestMeta, at: string): Submission {
  const optional = (name: keyof typeof BOUNDS, value: string | undefined) => (value ? { [name]: clipBytes(value, BOUNDS[name]) } : {});
  return {
    at, source: 'api', key_id: auth.key.keyId, request_id: meta.requestId, ...(meta.ip ? { ip: meta.ip } : {}),
    ...optional('user_agent', meta.userAgent), sms_consent: input.sms_consent, ...optional('sms_consent_source', input.sms_consent_source),
    ...optional('service', input.service), ...optional('notes', input.notes),
  };
}

/** Fields a merged submission may fill on the earlier client, when empty. Never `email`: the match key (and the person) stays. */
const FILLABLE = ['first_name', 'last_name', 'phone', 'notes', 'address', 'service', 'custom_fields'] as const;

/**
 * What a merge attaches to the earlier client (clients-store.ts mergeOnce writes it): its empty
 * fields filled, the submission listed, the count raised and a "returning lead" notification for
 * the team; refused (`full`) once the list holds MAX_LISTED_SUBMISSIONS.
 */
export function mergedSubmission(input: LeadInput, submission: Submission): MergedSubmission {
  const name = [input.first_name, input.last_name].filter(Boolean).join(' ');
  const notification = { id: newId('ntf'), type: 'lead.returning', title: `Returning lead: ${name}`, createdAt: submission.at };
  const fill = Object.fromEntries(FILLABLE.filter((field) => input[field] !== undefined).map((field) => [field, input[field]]));
  return { fill, submission: { ...submission }, notification, at: submission.at, maxListed: MAX_LISTED_SUBMISSIONS };
}
