/**
 * The public pages behind the links in notice e-mails (docs/notifications.md "Links"), served by
 * the settings function without a session: the signed token in the link is the authority, scoped to
 * one organization and one address. A GET only shows the page and its button; the button's POST
 * acts, so a mail scanner that prefetches links confirms or unsubscribes nothing. A mail client's
 * RFC 8058 one-click unsubscribe is that same POST (`List-Unsubscribe=One-Click` to the link).
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { confirmRecipient, unsubscribeRecipient, type LinkOutcome } from '../core/notify/recipients.js';
import { escapeHtml } from '../core/notify/compose.js';
import { noticeLinkPaths, verifyLink, type LinkPurpose } from '../core/notify/notice-links.js';

export const noticePageResources: Record<string, LinkPurpose> = { [noticeLinkPaths.confirm]: 'confirm', [noticeLinkPaths.unsubscribe]: 'unsubscribe' };

const headers = {
  'Content-Type': 'text/html; charset=utf-8',
  // No script, no style, no image; the form may post only to this origin.
  'Content-Security-Policy': "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  // The token is in the URL: never sent on to another site.
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

const page = (status: number, title: string, body: string): APIGatewayProxyResult => ({
  statusCode: status, headers,
  body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`,
});

const texts: Record<LinkPurpose, { title: string; ask: (email: string) => string; button: string; done: (email: string) => string }> = {
  confirm: {
    title: 'Confirm notices',
    ask: (email) => `Send notices (new leads, webhook endpoints that stop working, a daily digest, as the organization's admins picked) to <strong>${escapeHtml(email)}</strong>?`,
    button: 'Confirm',
    done: (email) => `Confirmed: notices will be sent to <strong>${escapeHtml(email)}</strong>. Every notice has a link to unsubscribe.`,
  },
  unsubscribe: {
    title: 'Unsubscribe from notices',
    ask: (email) => `Stop sending notices to <strong>${escapeHtml(email)}</strong>?`,
    button: 'Unsubscribe',
    done: (email) => `Unsubscribed: no more notices will be sent to <strong>${escapeHtml(email)}</strong>.`,
  },
};


function formToken(event: APIGatewayProxyEvent): string | undefined {
  if (!event.body) return undefined;
  const body = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  return new URLSearchParams(body).get('token') ?? undefined;
}

const invalid = (purpose: LinkPurpose) => page(400, texts[purpose].title, '<p>This link is not valid (it may be incomplete, or older than 7 days for a confirmation). Ask the organization\'s admin to add the address again.</p>');

/** Any method but GET (shows) and POST (acts): a HEAD, PUT or DELETE must neither act nor show a page. */
const notAllowed = (): APIGatewayProxyResult => ({
  statusCode: 405, headers: { ...headers, 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, POST' }, body: 'Method not allowed: GET shows this page, POST acts.\n',
});

export async function serveNoticePage(deps: Deps, event: APIGatewayProxyEvent, purpose: LinkPurpose, secret: () => Promise<string>): Promise<APIGatewayProxyResult> {
  if (event.httpMethod !== 'GET' && event.httpMethod !== 'POST') return notAllowed();
  const text = texts[purpose];
  const token = (event.httpMethod === 'POST' ? formToken(event) : undefined) ?? event.queryStringParameters?.token ?? '';
  if (event.httpMethod === 'GET') {
    // Checked here too, so the page never shows an address a forged link names; nothing changes until the POST.
    const email = verifyLink(await secret(), token, purpose, deps.now())?.email;
    if (!email) return invalid(purpose);
    // Posts to this same page (relative: works under an API Gateway stage prefix).
    return page(200, text.title, `<p>${text.ask(email)}</p><form method="post" action="${purpose}"><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">${text.button}</button></form>`);
  }
  const outcome: LinkOutcome = purpose === 'confirm' ? await confirmRecipient(deps, await secret(), token) : await unsubscribeRecipient(deps, await secret(), token);
  if (outcome.done) return page(200, text.title, `<p>${text.done(outcome.email)}</p>`);
  if (outcome.reason === 'invalid') return invalid(purpose);
  return page(410, text.title, outcome.reason === 'gone'
    ? '<p>This address is no longer on the list, or was added again since this e-mail (use the newest one).</p>'
    : '<p>This address cannot be confirmed: it was unsubscribed, or its mail bounced. Ask the organization\'s admin to add it again.</p>');
}
