/**
 * The local stack's mail capture (docs/local-stack.md "Mail"): a real SMTP server (smtp-server) on
 * 127.0.0.1 that keeps every message it is sent, parsed with mailparser, and a small HTTP server
 * on 127.0.0.1 to read them: `GET /` a page listing them, `GET /messages` (JSON, newest first;
 * `?to=<address>` for one recipient), `GET /messages/<id>.eml` the raw message. Nothing is relayed
 * anywhere. Kept in memory, the last MAX_KEPT messages.
 */
import { createServer, type Server } from 'node:http';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { isLoopbackHost, listenOnLoopback, foreignHostMessage } from './loopback-host.js';

const MAX_KEPT = 500;
const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

export interface CapturedMail {
  id: string;
  receivedAt: string;
  /** The envelope's recipients (RCPT TO). */
  to: string[];
  from: string;
  subject: string;
  text: string;
  html: string;
  /** Header lines as sent (name: value), in order. */
  headers: [string, string][];
  raw: string;
}

export interface MailCapture {
  /** `smtp://127.0.0.1:<port>`: what the mailer sends to. */
  smtpUrl: string;
  /** `http://127.0.0.1:<port>`: where to read what was sent. */
  inboxUrl: string;
  messages(): CapturedMail[];
  stop(): Promise<void>;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export async function startMailCapture(options: { smtpPort?: number; httpPort?: number; onError?: (error: unknown) => void } = {}): Promise<MailCapture> {
  const kept: CapturedMail[] = [];
  let counter = 0;
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: MAX_MESSAGE_BYTES,
    logger: false,
    banner: 'CRM local mail capture (nothing is relayed)',
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then((parsed) => {
          kept.unshift({
            id: `m${++counter}`,
            receivedAt: new Date().toISOString(),
            to: session.envelope.rcptTo.map((r) => r.address),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
            headers: parsed.headerLines.map((h) => [h.key, h.line.slice(h.line.indexOf(':') + 1).trim()]),
            raw: raw.toString('utf8'),
          });
          kept.length = Math.min(kept.length, MAX_KEPT);
          callback();
        }, (error: Error) => callback(error));
      });
    },
  });
  smtp.on('error', (error) => options.onError?.(error));
  const smtpPort = await listenOnLoopback(smtp.server, options.smtpPort ?? 0, 'choose another SMTP port');

  const http: Server = createServer((req, res) => {
    const port = (http.address() as { port: number }).port;
    if (!isLoopbackHost(req.headers.host, port)) {
      res.writeHead(403, { 'Content-Type': 'text/plain' }).end(foreignHostMessage);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://local');
    const to = url.searchParams.get('to')?.toLowerCase();
    const list = kept.filter((m) => !to || m.to.some((a) => a.toLowerCase() === to));
    const raw = /^\/messages\/(m\d+)\.eml$/.exec(url.pathname);
    if (req.method !== 'GET') {
      res.writeHead(405, { Allow: 'GET' }).end();
    } else if (url.pathname === '/messages') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ messages: list.map(({ raw: _raw, ...m }) => m) }, null, 2));
    } else if (raw) {
      const message = kept.find((m) => m.id === raw[1]);
      if (message) res.writeHead(200, { 'Content-Type': 'message/rfc822' }).end(message.raw);
      else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('No such message.');
    } else if (url.pathname === '/') {
      // Captured text is untrusted (a lead's name): escaped, and no script may run here.
      const rows = list.map((m) => `<tr><td>${escape(m.receivedAt)}</td><td>${escape(m.to.join(', '))}</td><td>${escape(m.subject)}</td><td><a href="/messages/${m.id}.eml">raw</a></td></tr><tr><td colspan="4"><pre>${escape(m.text)}</pre></td></tr>`).join('');
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': "default-src 'none'" })
        .end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Captured mail</title></head><body><h1>Captured mail (${list.length})</h1><p>JSON: <a href="/messages">/messages</a></p><table><tr><th>Received</th><th>To</th><th>Subject</th><th></th></tr>${rows}</table></body></html>`);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: GET /, /messages or /messages/<id>.eml');
    }
  });
  const httpPort = await listenOnLoopback(http, options.httpPort ?? 0, 'choose another mail capture port');
  return {
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    inboxUrl: `http://127.0.0.1:${httpPort}`,
    messages: () => [...kept],
    stop: async () => {
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
      await new Promise<void>((resolve) => { http.close(() => resolve()); http.closeAllConnections(); });
    },
  };
}
