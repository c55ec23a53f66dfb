/**
 * Notices queue → e-mail (functions/core/notify/mailer.ts): SMTP when the configuration names a
 * server, else SES through the stage's configuration set. The links' base URL and the configuration
 * set come from the stack (platform/bindings.ts mailerEnvVars), the links' secret from Secrets Manager.
 */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { mailerEnvVars } from '../core/platform/bindings.js';
import { mailTransport } from '../core/notify/mail-transport.js';
import { boundSecret } from '../core/settings/token-secret.js';
import { sendNoticeBatch } from './sqs-batch.js';
import { instrumented } from '../adapters/instrumentation.js';

const readLinkSecret = boundSecret('noticeLinks');

export const handler = instrumented(async (event: SQSEvent, context): Promise<SQSBatchResponse> => {
  const deps = await lambdaDeps();
  const baseUrl = (process.env[mailerEnvVars.publicApiUrl] ?? '').replace(/\/+$/, '');
  const transport = mailTransport(deps.config, { sesConfigurationSet: process.env[mailerEnvVars.sesConfigurationSet] });
  return sendNoticeBatch(deps, event.Records, { transport, linkSecret: readLinkSecret, baseUrl, remainingMs: () => context.getRemainingTimeInMillis() });
});
