/**
 * The TLS rule of a notice SMTP server's URL (docs/notifications.md "Transport"), apart from
 * platform/config.ts: it needs nodemailer's own URL parser, and config.ts goes into every
 * function's bundle while only the mailer sends mail. Used by notify/mail-transport.ts (the
 * refusal before any connection) and by `crm` reading a deployed stage's settings (lib/cli/target.ts).
 */
// nodemailer's own reading of a connection URL: the TLS rule is decided on what the transport will do.
import { parseConnectionUrl } from 'nodemailer/lib/shared';

/**
 * `smtp://…?secure=true` as `smtps://…`: nodemailer takes `secure` from the scheme and ignores the
 * query's, so the URL would otherwise go in clear text. Exactly `secure=true` (the first value),
 * nothing else: the TLS rule below is then decided on what nodemailer itself makes of the result.
 */
export function tlsFromTheStart(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.protocol !== 'smtp:' || parsed.searchParams.get('secure') !== 'true') return url;
  parsed.searchParams.delete('secure');
  return `smtps:${parsed.href.slice('smtp:'.length)}`;
}

/**
 * Why a deployed stage may not send over `url`, if it may not: a plain `smtp://` URL sends the
 * notices (leads' contact details, unsubscribe links) and any credentials in clear text. Decided on
 * what the transport will use, not on a reading of the query: the URL as notify/mail-transport.ts
 * hands it over (tlsFromTheStart), parsed by nodemailer's own parseConnectionUrl, must give
 * `secure: true` (`smtps://`, or `smtp://…?secure=true`: TLS from the start) or `requireTLS: true`
 * (`smtp://…?requireTLS=true`: STARTTLS or nothing). nodemailer's keys and values are
 * case-sensitive and the scheme's `secure` wins over the query's, so `?Secure=true`,
 * `?requiretls=true`, `?secure=TRUE` or `?secure=false&secure=true` are plain text and refused. A
 * `tls.rejectUnauthorized` other than true is refused too (it turns off the check of the server's
 * certificate: TLS to whoever answers is no better). Plain `smtp://` is for the local stack
 * (`local: true`): its capture server and CRM_SMTP_URL.
 */
export function plainSmtpProblem(url: string | undefined, local: boolean): string | undefined {
  if (!url || local) return undefined;
  let options: ReturnType<typeof parseConnectionUrl> = {};
  try {
    options = parseConnectionUrl(tlsFromTheStart(url));
  } catch { /* not a URL: refused below */ }
  const tls = (options.tls ?? {}) as { rejectUnauthorized?: unknown };
  if ('rejectUnauthorized' in tls && tls.rejectUnauthorized !== true) {
    return `noticeSmtpUrl sets tls.rejectUnauthorized=${String(tls.rejectUnauthorized)}, which a deployed stage refuses (it turns off the check of the server's certificate): `
      + 'remove it (and give the server a certificate a public CA signed)';
  }
  if (options.secure === true || options.requireTLS === true) return undefined;
  return 'noticeSmtpUrl is a plain smtp:// URL, which a deployed stage refuses (notices would travel in clear text): '
    + 'use smtps://host:465 (or smtp://host:465?secure=true), or smtp://host:587?requireTLS=true (exactly so: nodemailer reads them case-sensitively); plain smtp:// is for the local stack only';
}
