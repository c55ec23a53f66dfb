/**
 * The webhook HTTP client: POST with keep-alive agents created once per container, the SSRF guard
 * as the agents' DNS lookup (so it decides on the address actually connected to), no redirects, a
 * total time-out, and at most 4 KiB of the response kept. Never throws: every outcome is a result.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type NetConnectOpts, type Socket } from 'node:net';
import { checkAddress, guardedLookup } from './ssrf.js';

export const USER_AGENT = 'crm-webhooks/1.0 (+https://docs.crm.example/webhooks)';
const MAX_BODY = 4096;

export interface PostResult {
  ok: boolean;
  status?: number;
  latencyMs: number;
  error?: string;
  errorCode?: string;
  responseBody?: string;
  retryAfter?: string;
}

export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allow: string[];
  /** Tests: the DNS step of the guard. */
  lookup?: LookupFunction;
  /** Tests: replaces socket creation (records the attempt instead of connecting). */
  createConnection?: (options: NetConnectOpts & { lookup?: LookupFunction; host?: string }) => Socket;
}

const agents = new Map<string, { http: http.Agent; https: https.Agent }>();
function agentsFor(allow: string[]) {
  const key = allow.join(',');
  let pair = agents.get(key);
  if (!pair) {
    const options = { keepAlive: true, maxSockets: 50, lookup: guardedLookup(allow) };
    pair = { http: new http.Agent(options), https: new https.Agent(options) };
    agents.set(key, pair);
  }
  return pair;
}

export function postWebhook(options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const clock: { timer?: NodeJS.Timeout } = {}; // set once the request exists; `done` may run before
    const done = (result: Omit<PostResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(clock.timer);
      resolve({ ...result, latencyMs: elapsed() });
    };
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      return done({ ok: false, error: 'invalid URL', errorCode: 'EINVALIDURL' });
    }
    // Node skips `lookup` for IP literals: decide on them here.
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(literal)) {
      const decision = checkAddress(literal, options.allow);
      if (decision.blocked) return done({ ok: false, error: `refused to connect to ${literal}: ${decision.reason}`, errorCode: 'ESSRF' });
    }
    const client = url.protocol === 'https:' ? https : http;
    const custom = options.lookup || options.createConnection;
    let agent: http.Agent = agentsFor(options.allow)[url.protocol === 'https:' ? 'https' : 'http'];
    if (custom) {
      agent = new client.Agent({ keepAlive: false, lookup: options.lookup ?? guardedLookup(options.allow) } as http.AgentOptions);
      if (options.createConnection) (agent as unknown as { createConnection: unknown }).createConnection = options.createConnection;
    }
    clock.timer = setTimeout(() => {
      request.destroy(Object.assign(new Error(`no response within ${options.timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, options.timeoutMs);
    const request = client.request(url, {
      method: 'POST',
      agent,
      headers: { ...options.headers, 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, 'Content-Length': Buffer.byteLength(options.body) },
    }, (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        if (kept < MAX_BODY) {
          chunks.push(chunk.subarray(0, MAX_BODY - kept));
          kept += Math.min(chunk.length, MAX_BODY - kept);
        }
      });
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        const retryAfter = response.headers['retry-after'];
        done({
          ok: status >= 200 && status < 300,
          status,
          responseBody: Buffer.concat(chunks).toString('utf8'),
          ...(retryAfter ? { retryAfter: String(retryAfter) } : {}),
          ...(status >= 300 && status < 400 ? { error: `redirect to ${response.headers.location ?? '?'} not followed` } : {}),
        });
      });
      response.on('error', (error: NodeJS.ErrnoException) => done({ ok: false, status: response.statusCode, error: error.message, errorCode: error.code }));
    });
    request.on('error', (error: NodeJS.ErrnoException) => done({ ok: false, error: error.message, errorCode: error.code }));
    request.end(options.body);
  });
}
