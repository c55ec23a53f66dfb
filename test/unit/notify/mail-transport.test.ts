/**
 * The transport's TLS rule (docs/notifications.md "Transport"): a deployed stage refuses a plain
 * `smtp://` server, naming the field, before any byte leaves, and `crm` warns reading its settings;
 * the local stack (`local: true`) sends to it. Against the test SMTP server on loopback.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { mailTransport } from '../../../functions/core/notify/mail-transport.js';
import { tlsFromTheStart } from '../../../functions/core/notify/smtp-url.js';
import { parseConfig } from '../../../functions/core/platform/config.js';
import { asDeployedStage } from '../../../lib/cli/target.js';
import { logger } from '../../../functions/core/platform/observability.js';
import { TestMailServer } from '../../integration/support/mail-server.js';

const server = new TestMailServer();
beforeAll(() => server.up());
afterAll(() => server.stop());
jest.spyOn(logger, 'error').mockImplementation(() => undefined);

const mail = (to: string) => ({ organizationId: 'org_1', to, subject: 'New lead: Ann', text: 'Ann', html: '<p>Ann</p>' });

describe('a plain smtp:// server', () => {
  it('is refused on a deployed stage, naming noticeSmtpUrl, and nothing reaches the server', async () => {
    const config = parseConfig({ local: false, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}`, noticeSendTimeoutMs: 2000 });
    await expect(mailTransport(config).send(mail('deployed@shop.example'))).rejects.toMatchObject({ name: 'SmtpNotTls', message: expect.stringContaining('noticeSmtpUrl') });
    expect(server.to('deployed@shop.example')).toEqual([]);
    const warnings: string[] = [];
    asDeployedStage(config, 'test', (m) => warnings.push(m));
    expect(warnings).toEqual([expect.stringContaining('noticeSmtpUrl is a plain smtp:// URL')]);
  });

  it('is used by the local stack', async () => {
    const config = parseConfig({ local: true, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}`, noticeSendTimeoutMs: 2000 });
    await mailTransport(config).send(mail('local@shop.example'));
    expect(server.to('local@shop.example')).toHaveLength(1);
  });

  it('with requireTLS, or smtps://, is TLS: a deployed stage may use it (this server offers no STARTTLS, so the send fails rather than go in clear text)', async () => {
    const config = parseConfig({ local: false, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}?requireTLS=true`, noticeSendTimeoutMs: 2000 });
    const warnings: string[] = [];
    asDeployedStage(config, 'test', (m) => warnings.push(m));
    expect(warnings).toEqual([]);
    await expect(mailTransport(config).send(mail('tls@shop.example'))).rejects.not.toMatchObject({ name: 'SmtpNotTls' });
    expect(server.to('tls@shop.example')).toEqual([]);
  });

  it('with ?secure=true is TLS from the start (sent as smtps://, which nodemailer would otherwise not do): a deployed stage may use it, and nothing goes in clear text', async () => {
    expect(tlsFromTheStart('smtp://u:p@mail.example:465?secure=true&pool=true')).toBe('smtps://u:p@mail.example:465?pool=true');
    expect(tlsFromTheStart('smtp://mail.example:587?requireTLS=true')).toBe('smtp://mail.example:587?requireTLS=true');
    const config = parseConfig({ local: false, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}?secure=true`, noticeSendTimeoutMs: 2000 });
    const warnings: string[] = [];
    asDeployedStage(config, 'test', (m) => warnings.push(m));
    expect(warnings).toEqual([]);
    await expect(mailTransport(config).send(mail('secure@shop.example'))).rejects.not.toMatchObject({ name: 'SmtpNotTls' });
    expect(server.to('secure@shop.example')).toEqual([]);
  });
});

describe('a URL that reads as TLS to a careless eye but not to nodemailer (case-sensitive keys and values, the scheme\'s secure first)', () => {
  it.each(['smtp://127.0.0.1:PORT?requiretls=true', 'smtp://127.0.0.1:PORT?secure=TRUE', 'smtp://127.0.0.1:PORT?Secure=true', 'smtp://127.0.0.1:PORT?secure=false&secure=true', 'smtp://127.0.0.1:PORT?requireTLS=TRUE', 'smtp://127.0.0.1:PORT?requireTLS=1'])('%s is refused on a deployed stage and nothing reaches the server', async (url) => {
    const config = parseConfig({ local: false, noticeSmtpUrl: url.replace('PORT', String(server.port)), noticeSendTimeoutMs: 2000 });
    await expect(mailTransport(config).send(mail('careless@shop.example'))).rejects.toMatchObject({ name: 'SmtpNotTls', message: expect.stringContaining('noticeSmtpUrl is a plain smtp:// URL') });
    expect(server.to('careless@shop.example')).toEqual([]);
    const warnings: string[] = [];
    asDeployedStage(config, 'test', (m) => warnings.push(m));
    expect(warnings).toEqual([expect.stringContaining('noticeSmtpUrl is a plain smtp:// URL')]);
  });
});

describe('a URL that turns off the certificate check', () => {
  it.each(['smtps://127.0.0.1:PORT?tls.rejectUnauthorized=false', 'smtp://127.0.0.1:PORT?requireTLS=true&tls.rejectUnauthorized=0'])('%s is refused on a deployed stage, naming the field, and nothing reaches the server', async (url) => {
    const config = parseConfig({ local: false, noticeSmtpUrl: url.replace('PORT', String(server.port)), noticeSendTimeoutMs: 2000 });
    await expect(mailTransport(config).send(mail('unchecked@shop.example'))).rejects.toMatchObject({ name: 'SmtpNotTls', message: expect.stringContaining('noticeSmtpUrl sets tls.rejectUnauthorized') });
    expect(server.to('unchecked@shop.example')).toEqual([]);
    const warnings: string[] = [];
    asDeployedStage(config, 'test', (m) => warnings.push(m));
    expect(warnings).toEqual([expect.stringContaining('tls.rejectUnauthorized')]);
  });
});
