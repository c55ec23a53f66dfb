/**
 * A test SMTP server (smtp-server, each message parsed with mailparser) on loopback, for the tests
 * that receive the stack's e-mail through CRM_SMTP_URL: what each message said, its headers as sent,
 * and when it arrived; `down()` refuses connections on the same port until `up()`; an address in
 * `refusing` is answered 550 5.1.1 to its RCPT TO, one in `answers` with that reply, and every MAIL
 * FROM with `mailFromAnswer` when set.
 */
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

/** `headers`: each header's value as sent (unfolded), by lower-case name. */
export interface Received { to: string[]; subject: string; text: string; html: string; raw: string; headers: Map<string, string>; /** When it arrived (epoch ms). */ at: number }

/** A test SMTP server on a fixed loopback port: `down()` answers connections by closing them, `up()` serves SMTP again. */
export class TestMailServer {
  readonly received: Received[] = [];
  /** Recipients whose RCPT TO is answered `550 No such user` (a permanent refusal of that address). */
  readonly refusing = new Set<string>();
  /** Recipients whose RCPT TO gets this reply (`550 5.7.1 Relaying denied`: code 550, text '5.7.1 Relaying denied'). */
  readonly answers = new Map<string, { code: number; text: string }>();
  /** When set, every MAIL FROM gets this reply (a sender the server does not take). */
  mailFromAnswer?: { code: number; text: string };
  /** RCPT TOs answered 550. */
  rejected = 0;
  refused = 0;
  port = 0;
  private smtp?: SMTPServer;
  private dead?: NetServer;
  private sockets = new Set<Socket>();

  async up(): Promise<void> {
    if (this.dead) await new Promise<void>((r) => { this.dead!.close(() => r()); for (const s of this.sockets) s.destroy(); });
    this.dead = undefined;
    this.smtp = new SMTPServer({
      // The replies as the test wrote them (its text carries any enhanced code).
      authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false, hideENHANCEDSTATUSCODES: true,
      onMailFrom: (_address, _session, callback) => {
        const answer = this.mailFromAnswer;
        return answer ? callback(Object.assign(new Error(answer.text), { responseCode: answer.code })) : callback();
      },
      onRcptTo: (address, _session, callback) => {
        const answer = this.answers.get(address.address.toLowerCase());
        if (answer) return callback(Object.assign(new Error(answer.text), { responseCode: answer.code }));
        if (!this.refusing.has(address.address.toLowerCase())) return callback();
        this.rejected += 1;
        return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks);
          simpleParser(raw).then((m) => {
            this.received.push({ to: session.envelope.rcptTo.map((r) => r.address), subject: m.subject ?? '', text: m.text ?? '', html: typeof m.html === 'string' ? m.html : '', raw: raw.toString('utf8'), headers: new Map(m.headerLines.map((h) => [h.key, h.line.slice(h.line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim()])), at: Date.now() });
            callback();
          }, callback);
        });
      },
    });
    await new Promise<void>((resolve) => this.smtp!.listen(this.port, '127.0.0.1', () => resolve()));
    this.port = (this.smtp.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    await new Promise<void>((r) => this.smtp!.close(() => r()));
    this.dead = createNetServer((socket) => { this.refused += 1; this.sockets.add(socket); socket.destroy(); });
    await new Promise<void>((resolve) => this.dead!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  async stop(): Promise<void> {
    if (this.dead) await new Promise<void>((r) => this.dead!.close(() => r()));
    else await new Promise<void>((r) => this.smtp!.close(() => r()));
  }

  to(address: string): Received[] {
    return this.received.filter((m) => m.to.includes(address));
  }
}
