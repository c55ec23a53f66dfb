/**
 * What the request log reads of a client (settings/request-log-read.ts, through the clients store's `leadRequest` selection): who sent the lead that
 * created it, when and through which channel (the daily digest's leads by source), never its contact details. The settings API's IAM grant on clients allows a
 * Query projecting these alone (lib/topology.ts), so the two cannot drift apart.
 */
export const REQUEST_LOG_CLIENT_FIELDS = ['pk', 'sk', 'id', 'source', 'created_at', 'request_id', 'key_id', 'request_status', 'request_channel'] as const;
