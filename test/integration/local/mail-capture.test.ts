/**
 * The local stack's mail capture (docs/local-stack.md "Mail"): what is sent to its SMTP server is
 * read back from its page and API, a lead's markup shown as text. Through the real listeners of
 * the suite's stack; the message is sent with nodemailer, as the mailer sends.
 */
import { describe, it, expect } from '@jest/globals';
import nodemailer from 'nodemailer';
import { testStack } from '../support/stack.js';

describe('the local mail capture', () => {
  it('keeps what its SMTP server is sent, listed as JSON by recipient, raw, and on its page as text', async () => {
    const { info } = await testStack();
    expect(info.mail?.smtpUrl).toMatch(/^smtp:\/\/127\.0\.0\.1:\d+$/);
    const to = `capture-${Date.now()}@shop.example`;
    await nodemailer.createTransport({ url: info.mail!.smtpUrl } as never).sendMail({ from: 'notices@example.com', to, subject: 'Captured <b>once</b>', text: 'Hello <script>alert(1)</script>' });
    const { messages } = await (await fetch(`${info.mail!.inboxUrl}/messages?to=${encodeURIComponent(to)}`)).json() as { messages: { id: string; to: string[]; subject: string; text: string }[] };
    expect(messages).toEqual([expect.objectContaining({ to: [to], subject: 'Captured <b>once</b>', text: expect.stringContaining('Hello <script>') })]);
    const raw = await (await fetch(`${info.mail!.inboxUrl}/messages/${messages[0].id}.eml`)).text();
    expect(raw).toMatch(/^Subject: Captured <b>once<\/b>$/m);
    const page = await fetch(info.mail!.inboxUrl!);
    expect(page.headers.get('content-security-policy')).toBe("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('Captured &lt;b&gt;once&lt;/b&gt;');
    expect(html).not.toContain('<script>alert(1)');
  });
});
