/**
 * The attributes of the organizations table the e-mail functions may name (their IAM grants in
 * lib/topology.ts; notify/recipient-store.ts projects and updates these alone): never a whole
 * organization item (a wallet, a key's hash).
 */
/** A read of a recipient (the mailer's Query and GetItem, the settings API's list). */
export const RECIPIENT_FIELDS = ['pk', 'sk', 'email', 'notices', 'status', 'addedAt', 'confirmedAt', 'suppressedAt', 'suppressedReason'] as const;
/** The organization item's attributes the mailer reads (the confirmation e-mail names the organization). */
export const ORGANIZATION_NAME_FIELDS = ['pk', 'sk', 'name'] as const;
/** The mail-feedback function's UpdateItem (a recipient suppressed). */
export const SUPPRESSION_FIELDS = ['pk', 'sk', 'status', 'suppressedAt', 'suppressedReason'] as const;
