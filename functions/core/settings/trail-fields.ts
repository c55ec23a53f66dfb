/**
 * What a lead's trail reads of a client (lead-trail.ts): who and where it came from, never its
 * contact details. The settings API's IAM grant on clients allows GetItem projecting these alone
 * (lib/topology.ts), so the two cannot drift apart.
 */
export const TRAIL_CLIENT_FIELDS = ['id', 'status', 'source', 'first_name', 'last_name', 'created_at', 'possible_duplicate_of', 'submission_count', 'submissions', 'request_id'] as const;
