/**
 * Creates a lead in one transaction (DESIGN §6, §9): the client (status `lead`), the team
 * notification, the usage counter of the day and, on prepaid organizations, the wallet debit.
 * Either all of it is written or none; a wallet that cannot pay is a 402.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../clients.js';
import { paymentRequired } from '../errors.js';
import { newId } from '../ids.js';
import { keys, type AuthContext } from '../model.js';
import type { LeadInput } from './schema.js';

export interface RequestMeta { requestId: string; ip?: string; userAgent?: string }

export type Client = LeadInput & {
  id: string;
  organization_id: string;
  status: 'lead';
  source: 'api';
  sms_consent_proof?: { source: string; captured_at: string; ip?: string; user_agent?: string; key_id: string };
  created_at: string;
  updated_at: string;
};

export async function createLead(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta): Promise<Client> {
  const org = auth.organization;
  const at = new Date(deps.now()).toISOString();
  const { sms_consent_source: consentSource, ...fields } = input;
  const client: Client = {
    id: newId('cli'),
    organization_id: org.id,
    status: 'lead',
    source: 'api',
    ...fields,
    ...(input.sms_consent && consentSource
      ? { sms_consent_proof: { source: consentSource, captured_at: at, ip: meta.ip, user_agent: meta.userAgent, key_id: auth.key.keyId } }
      : {}),
    created_at: at,
    updated_at: at,
  };
  const price = org.billing === 'prepaid' ? deps.settings.pricePerCallMicros : 0;
  const notificationId = newId('ntf');
  const name = [client.first_name, client.last_name].filter(Boolean).join(' ');
  try {
    await deps.doc.send(new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: deps.tables.clients,
            Item: { ...keys.client(org.id, client.id), entity: 'client', ...client },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        {
          Put: {
            TableName: deps.tables.organizations,
            Item: { ...keys.notification(org.id, at, notificationId), entity: 'notification', id: notificationId, type: 'lead.created', clientId: client.id, title: `New lead: ${name}`, createdAt: at },
          },
        },
        {
          Update: {
            TableName: deps.tables.organizations,
            Key: keys.usage(org.id, at.slice(0, 10)),
            UpdateExpression: 'ADD calls :one, billed_micros :price SET entity = :entity',
            ExpressionAttributeValues: { ':one': 1, ':price': price, ':entity': 'usage' },
          },
        },
        ...(price > 0
          ? [{
              Update: {
                TableName: deps.tables.organizations,
                Key: keys.org(org.id),
                UpdateExpression: 'SET walletMicros = walletMicros - :price',
                ConditionExpression: 'walletMicros >= :price',
                ExpressionAttributeValues: { ':price': price },
              },
            }]
          : []),
      ],
    }));
  } catch (error) {
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[3]?.Code === 'ConditionalCheckFailed') {
      throw paymentRequired(`The prepaid wallet cannot pay for this call (${price / 1_000_000} USD). Top it up to keep receiving leads.`);
    }
    throw error;
  }
  return client;
}
