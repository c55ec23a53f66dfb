/**
 * How a composed e-mail leaves (docs/notifications.md "Transport"): nodemailer over SMTP when the
 * configuration names a server (`noticeSmtpUrl`: the local stack's mail capture, CRM_SMTP_URL, a
 * test's server), else Amazon SES (v2 API) through the stage's configuration set, whose bounce and
 * complaint events suppress the address (notify/mail-feedback.ts). nodemailer builds the MIME
 * message: headers are encoded (non-ASCII, long lines), a value cannot add a header.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../platform/config.js';
import { plainSmtpProblem, tlsFromTheStart } from './smtp-url.js';
import { logger } from '../platform/observability.js';

export interface OutgoingMail {
  organizationId: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
}

export interface MailTransport {
  /** Resolves once the server (or SES) accepted the message; rejects otherwise. */
  send(mail: OutgoingMail): Promise<void>;
}

export interface TransportOptions {
  /** The SES configuration set (AWS only: lib/stacks sets it). */
  sesConfigurationSet?: string;
}

const transporters = new Map<string, Promise<Transporter>>();

function transporter(config: Config): Promise<Transporter> {
  const key = config.noticeSmtpUrl ? `smtp ${config.noticeSmtpUrl} ${config.noticeSendTimeoutMs}` : 'ses';
  let made = transporters.get(key);
  if (!made) {
    made = config.noticeSmtpUrl
      ? Promise.resolve(nodemailer.createTransport({
        url: tlsFromTheStart(config.noticeSmtpUrl),
        connectionTimeout: config.noticeSendTimeoutMs, greetingTimeout: config.noticeSendTimeoutMs, socketTimeout: config.noticeSendTimeoutMs,
      } as Parameters<typeof nodemailer.createTransport>[0]))
      // Loaded on first use: the SMTP path (local, tests) never loads the SES client.
      : import('@aws-sdk/client-sesv2').then(({ SESv2Client, SendEmailCommand }) => {
        // Bounded like the SMTP path (the NodeHttpHandler's options): a slow SES endpoint fails the send, it does not hang the batch.
        const sesClient = new SESv2Client({ requestHandler: { connectionTimeout: config.noticeSendTimeoutMs, requestTimeout: config.noticeSendTimeoutMs } });
        return nodemailer.createTransport({ SES: { sesClient, SendEmailCommand } } as Parameters<typeof nodemailer.createTransport>[0]);
      });
    made.catch(() => transporters.delete(key));
    transporters.set(key, made);
  }
  return made;
}

export class SmtpNotTls extends Error {
  override name = 'SmtpNotTls';
  readonly code = 'SmtpNotTls';
}

export function mailTransport(config: Config, options: TransportOptions = {}): MailTransport {
  return {
    async send(mail) {
      // Refused before any connection: nothing leaves in clear text; the notice waits in the queue (and its dead-letter queue) until the URL is fixed.
      const problem = plainSmtpProblem(config.noticeSmtpUrl, config.local);
      if (problem) {
        logger.error(`mailer: ${problem}`);
        throw new SmtpNotTls(problem);
      }
      const via = await transporter(config);
      await via.sendMail({
        from: config.noticeSender,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        headers: mail.headers,
        // SES only (the SMTP transport ignores it): the configuration set, and the organization as a
        // tag so a bounce or complaint event names whose recipient to suppress.
        ...(config.noticeSmtpUrl ? {} : {
          ses: {
            ...(options.sesConfigurationSet ? { ConfigurationSetName: options.sesConfigurationSet } : {}),
            EmailTags: [{ Name: 'organization', Value: mail.organizationId }],
          },
        }),
      } as Parameters<Transporter['sendMail']>[0]);
    },
  };
}
