/**
 * A lead's submission as a client keeps it, and the merge of a later one into the earlier client
 * it matches (docs/leads.md "Duplicates"). Both are bounded in bytes, so a client can never grow
 * near DynamoDB's 400 KB item limit and a merge's write cost stays bounded (docs/data-model.md).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { newId } from '../platform/ids.js';
import { clipBytes } from '../platform/text.js';
import { keys, type AuthContext } from '../platform/model.js';
import type { LeadInput } from './lead-schema.js';

export interface RequestMeta {
  requestId: string; ip?: string; userAgent?: string;
  /**
   * The status the request is answered when it creates a client (absent: 201; a no-script form post
   * redirected to its thank-you page: 303). The client is its request's row in the request log
   * (`request_id`, `key_id`, `request_status` when not 201; docs/settings.md "Request log").
   */
  rowStatus?: number;
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

export type MergeUpdate = { Update: NonNullable<UpdateCommand['input']> & { UpdateExpression: string } };

/**
 * The update attaching a submission to the earlier client: its empty fields filled, the submission
 * listed, the count raised and a "returning lead" notification for the team. Conditioned on the
 * client existing with room in its list: a failed condition with an old item means the list is full.
 */
export function mergeWrite(deps: Deps, orgId: string, clientId: string, input: LeadInput, submission: Submission): MergeUpdate {
  const name = [input.first_name, input.last_name].filter(Boolean).join(' ');
  const notification = { id: newId('ntf'), type: 'lead.returning', title: `Returning lead: ${name}`, createdAt: submission.at };
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':at': submission.at, ':one': 1, ':sub': [submission], ':empty': [], ':max': MAX_LISTED_SUBMISSIONS, ':ntf': notification };
  const sets = ['updated_at = :at', 'submission_count = if_not_exists(submission_count, :one) + :one', 'submissions = list_append(if_not_exists(submissions, :empty), :sub)', 'notification = :ntf'];
  for (const field of FILLABLE) {
    if (input[field] === undefined) continue;
    names[`#${field}`] = field;
    values[`:${field}`] = input[field];
    sets.push(`#${field} = if_not_exists(#${field}, :${field})`);
  }
  return {
    Update: {
      TableName: deps.tables.clients,
      Key: keys.client(orgId, clientId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(submissions) OR size(submissions) < :max)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
    },
  };
}

/** What a merge came to: merged, or not (`gone`: the client was deleted; `full`: its list is full or the item too large), so a new client is created instead. */
export type MergeResult = 'merged' | 'gone' | 'full';

/** The postpaid merge. A ValidationException (the item would pass 400 KB) is `full`, not a 500. */
export async function mergeOnce(deps: Deps, write: MergeUpdate): Promise<MergeResult> {
  try {
    await deps.doc.send(new UpdateCommand(write.Update));
    return 'merged';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return error.Item ? 'full' : 'gone';
    if ((error as Error).name === 'ValidationException') return 'full';
    throw error;
  }
}
