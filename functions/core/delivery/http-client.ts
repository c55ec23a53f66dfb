/**
 * The webhook HTTP client (docs/webhooks.md): one POST, never a thrown network error — every outcome is a
 * PostResult the caller records.
 *
 * - SSRF: the guard (ssrf.ts) is the agents' DNS `lookup`, so it judges the address actually
 *   connected to, at connect time (DNS-rebinding safe). Node skips `lookup` for IP-literal hosts,
 *   so those are put through the same guard before the request.
 * - Keep-alive agents are made once per container: one pair per allow-list (or per injected lookup).
 * - Redirects are not followed: a 3xx is a failure with its status recorded.
 * - One total time-out (default 10 s) covers DNS, connect, TLS, and the whole response.
 * - At most 4 KiB of the response body is kept (as UTF-8).
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { guardedLookup, systemResolver } from './ssrf.js';

/**
 * A redirect's target as the error names it, whole (Node bounds a response's headers at 16 KiB):
 * the attempt log redacts the endpoint's secrets in it before cutting it (attempt-log.ts
 * attemptError); cut here, a secret echoed across the cut would reach it half.
 */
const locationOf = (location: string | undefined) => location ?? '(no location)';

export const USER_AGENT = 'crm-webhooks/1.0 (+https://docs.crm.example/webhooks)';
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BODY_BYTES = 4096;
/**
 * What is read of a response body to make that excerpt: more than it keeps, so a stored secret the
 * receiver echoes across the excerpt's end is redacted whole before the cut (redaction.ts).
 */
export const MAX_READ_BODY_BYTES = 4 * MAX_RESPONSE_BODY_BYTES;
/** Beyond this much response body the socket is dropped rather than drained for reuse. */
const MAX_DRAIN_BYTES = 1024 * 1024;

export interface PostResult {
  /** A 2xx arrived. */
  ok: boolean;
  status?: number;
  latencyMs: number;
  error?: string;
  /** ETIMEDOUT, ESSRF, ECONNREFUSED, ENOTFOUND, EREDIRECT, EINVALIDURL, ECONFIG, ... */
  errorCode?: string;
  /** The first MAX_READ_BODY_BYTES of the response body, decoded as UTF-8 (the attempt keeps an excerpt of it). */
  responseBody?: string;
  /** The body went on past what was read. */
  responseBodyTruncated?: boolean;
  /** The raw Retry-After header, if any (parse with schedule.parseRetryAfter). */
  retryAfter?: string;
  /** What was sent and what came back, as pairs (the attempt log keeps them bounded: attempt-log.ts keptHeaders). */
  requestHeaders?: [string, string][];
  responseHeaders?: [string, string][];
}

/** Where a connection would go once the guard has passed it: a resolved address, never a name. */
export interface ConnectTarget {
  host: string;
  port: number;
  family: number;
  /** The URL's host name (the TLS server name). */
  hostname: string;
  tls: boolean;
}
/** Replaces socket creation (plain and TLS); tests use it to RECORD an attempt instead of connecting. */
export type ConnectFunction = (target: ConnectTarget) => Socket;

export interface PostWebhookInput {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Total time-out; default 10 s. */
  timeoutMs?: number;
  /** The SSRF guard as a lookup (guardedLookup(resolver, allow)); default: the system resolver guarded by `allow`. */
  lookup?: LookupFunction;
  /** CIDRs the default guard admits (ignored when `lookup` is given). */
  allow?: string[];
  /** Tests only: see ConnectFunction. The guard still runs first; nothing is cached. */
  connect?: ConnectFunction;
}

interface Agents { 'http:': http.Agent; 'https:': https.Agent }

const allAgents = new Set<http.Agent>();
const byAllowList = new Map<string, { lookup: LookupFunction; agents: Agents }>();
let byLookup = new WeakMap<LookupFunction, Agents>();

function makeAgents(lookup: LookupFunction, keepAlive: boolean): Agents {
  const options = { keepAlive, maxSockets: 50, lookup };
  const agents: Agents = { 'http:': new http.Agent(options), 'https:': new https.Agent(options) };
  if (keepAlive) Object.values(agents).forEach((agent) => allAgents.add(agent));
  return agents;
}

/** The guard and the agents for a request; throws only on a malformed allow-list. */
function guardFor(input: PostWebhookInput): { lookup: LookupFunction; agents: Agents } {
  if (input.connect) {
    const lookup = input.lookup ?? guardedLookup(systemResolver, input.allow ?? []);
    return { lookup, agents: recordingAgents(lookup, input.connect) };
  }
  if (input.lookup) {
    let agents = byLookup.get(input.lookup);
    if (!agents) byLookup.set(input.lookup, (agents = makeAgents(input.lookup, true)));
    return { lookup: input.lookup, agents };
  }
  const allow = input.allow ?? [];
  const key = allow.join(',');
  let entry = byAllowList.get(key);
  if (!entry) {
    const lookup = guardedLookup(systemResolver, allow);
    byAllowList.set(key, (entry = { lookup, agents: makeAgents(lookup, true) }));
  }
  return entry;
}

type AgentConnectOptions = { host: string; port: number | string; family?: number; servername?: string; lookup: LookupFunction };
type CreateConnection = (options: AgentConnectOptions, oncreate: (error: Error | null, socket?: Socket) => void) => Socket | undefined;

/**
 * Agents whose socket creation resolves through the guard exactly as net.connect would, then hands
 * the resolved address to `connect` instead of opening a socket.
 */
function recordingAgents(lookup: LookupFunction, connect: ConnectFunction): Agents {
  const agents = makeAgents(lookup, false);
  for (const [protocol, agent] of Object.entries(agents) as [keyof Agents, http.Agent][]) {
    const createConnection: CreateConnection = (options, oncreate) => {
      options.lookup(options.host, { family: options.family ?? 0 }, (error, address, family) => {
        if (error) return oncreate(error);
        try {
          oncreate(null, connect({ host: address as string, port: Number(options.port), family: family ?? 0, hostname: options.servername ?? options.host, tls: protocol === 'https:' }));
        } catch (thrown) {
          oncreate(thrown as Error);
        }
      });
      return undefined;
    };
    (agent as unknown as { createConnection: CreateConnection }).createConnection = createConnection;
  }
  return agents;
}

/** Closes every kept-alive socket (tests, the bench, a local-stack shutdown). */
export function destroyAgents(): void {
  for (const agent of allAgents) agent.destroy();
  allAgents.clear();
  byAllowList.clear();
  byLookup = new WeakMap();
}

type Outcome = Omit<PostResult, 'latencyMs'>;

/** POSTs a signed webhook. Resolves with the outcome; never rejects. */
export async function postWebhook(input: PostWebhookInput): Promise<PostResult> {
  const started = performance.now();
  const deadline = started + (input.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const finish = (outcome: Outcome): PostResult => ({ ...outcome, latencyMs: Math.round(performance.now() - started) });

  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    return finish({ ok: false, error: 'invalid URL', errorCode: 'EINVALIDURL' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return finish({ ok: false, error: `unsupported protocol ${url.protocol}`, errorCode: 'EINVALIDURL' });

  let guard: ReturnType<typeof guardFor>;
  try {
    guard = guardFor(input);
  } catch (error) {
    return finish({ ok: false, error: (error as Error).message, errorCode: 'ECONFIG' });
  }

  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal)) {
    const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) => guard.lookup(literal, { all: true }, (error) => resolve(error)));
    if (refused) return finish({ ok: false, error: refused.message, errorCode: refused.code ?? 'ESSRF' });
  }

  const agent = guard.agents[url.protocol];
  let attempt = await send(url, agent, input, deadline);
  // A kept-alive socket the receiver had just closed: the request never reached it, so try once more.
  if (attempt.staleSocket && performance.now() < deadline) attempt = await send(url, agent, input, deadline);
  return { ...finish(attempt.outcome), requestHeaders: Object.entries(sentHeaders(input)) };
}

/** The request's headers: the signature's, then ours. */
const sentHeaders = (input: PostWebhookInput): Record<string, string> => ({
  ...input.headers,
  'Content-Type': 'application/json',
  'User-Agent': USER_AGENT,
  'Content-Length': String(Buffer.byteLength(input.body)),
});

/** Node's raw header list (name, value, name, value, ...) as pairs. */
const pairsOf = (raw: string[]): [string, string][] => Array.from({ length: Math.floor(raw.length / 2) }, (_, i) => [raw[2 * i], raw[2 * i + 1]]);

function send(url: URL, agent: http.Agent, input: PostWebhookInput, deadline: number): Promise<{ outcome: Outcome; staleSocket?: boolean }> {
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined;
    const settle = (outcome: Outcome, staleSocket = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ outcome, staleSocket });
    };
    // One clock for DNS, connect, TLS and the whole response.
    const timer = setTimeout(() => {
      settle({ ok: false, ...(status !== undefined ? { status } : {}), error: `no complete response within ${input.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`, errorCode: 'ETIMEDOUT' });
      request?.destroy();
    }, Math.max(0, deadline - performance.now()));
    const client = url.protocol === 'https:' ? https : http;
    let request: http.ClientRequest | undefined;
    try {
      request = client.request(url, {
        method: 'POST',
        agent,
        headers: sentHeaders(input),
      }, (response) => {
        status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        let seen = 0;
        const outcome = (): Outcome => {
          const retryAfter = response.headers['retry-after'];
          const redirect = status! >= 300 && status! < 400;
          return {
            ok: status! >= 200 && status! < 300,
            status,
            responseBody: Buffer.concat(chunks).toString('utf8'),
            ...(seen > kept ? { responseBodyTruncated: true } : {}),
            responseHeaders: pairsOf(response.rawHeaders),
            ...(retryAfter ? { retryAfter } : {}),
            ...(redirect ? { error: `redirect (${status}) to ${locationOf(response.headers.location)} not followed`, errorCode: 'EREDIRECT' } : {}),
          };
        };
        response.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (kept < MAX_READ_BODY_BYTES) {
            const part = chunk.subarray(0, MAX_READ_BODY_BYTES - kept);
            chunks.push(part);
            kept += part.length;
          }
          if (seen > MAX_DRAIN_BYTES) {
            settle(outcome());
            response.destroy();
          }
        });
        response.on('end', () => settle(outcome()));
        response.on('close', () => {
          if (!response.complete) settle({ ok: false, status, error: 'the response ended early', errorCode: 'ECONNRESET' });
        });
        response.on('error', (error: NodeJS.ErrnoException) => settle({ ok: false, status, error: error.message, errorCode: error.code }));
      });
    } catch (error) {
      // Only for what the HTTP layer refuses up front (e.g. a header value with a newline).
      return settle({ ok: false, error: (error as Error).message, errorCode: (error as NodeJS.ErrnoException).code ?? 'EREQUEST' });
    }
    const sent = request;
    sent.on('error', (error: NodeJS.ErrnoException) => {
      const stale = sent.reusedSocket && status === undefined && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      settle({ ok: false, error: error.message, errorCode: error.code ?? 'EREQUEST' }, stale);
    });
    sent.end(input.body);
  });
}
