/**
 * Nothing the local stack runs is reachable from outside this machine. The kernel's socket tables
 * (/proc/net/tcp, tcp6) are read, never probed over the network: every listener on the stack's
 * ports must be bound to a loopback address. DynamoDB Local has no bind option; it must run in a
 * network namespace of its own (with telemetry off) behind the 127.0.0.1 listener.
 */
import { describe, it, expect } from '@jest/globals';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { testStack } from '../support/stack.js';

interface Listener { address: string; port: number }

/** Listening TCP sockets of this network namespace, addresses decoded from the kernel's hex. */
function listeners(): Listener[] {
  const out: Listener[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A') continue; // LISTEN
      const [hex, port] = local.split(':');
      // Each 32-bit word is in host (little-endian) order.
      const bytes = hex.match(/.{8}/g)!.flatMap((word) => word.match(/../g)!.reverse().map((b) => parseInt(b, 16)));
      const address = bytes.length === 4
        ? bytes.join('.')
        : Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16)).join(':');
      out.push({ address, port: parseInt(port, 16) });
    }
  }
  return out;
}

const isLoopback = (address: string) =>
  address.startsWith('127.') || address === '0:0:0:0:0:0:0:1' || /^0:0:0:0:0:ffff:7f[0-9a-f]{2}:/.test(address);

const cmdline = (pid: string) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
const parentOf = (pid: string) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1];

describe('the local stack is loopback-only', () => {
  it('binds every listener on its ports to a loopback address', async () => {
    const { info } = await testStack();
    const ports = {
      ...Object.fromEntries((['apiUrl', 'dynamodbEndpoint', 'sqsEndpoint', 'ssmEndpoint'] as const).map((k) => [k, Number(new URL(info[k]!).port)])),
      // The mail capture: its SMTP server and its page.
      mailSmtp: Number(new URL(info.mail!.smtpUrl).port), mailInbox: Number(new URL(info.mail!.inboxUrl!).port),
    };
    const all = listeners();
    for (const [what, port] of Object.entries(ports)) {
      const bound = all.filter((l) => l.port === port);
      expect({ what, bound: bound.length > 0 }).toEqual({ what, bound: true });
      expect({ what, exposed: bound.filter((l) => !isLoopback(l.address)) }).toEqual({ what, exposed: [] });
    }
  });

  it("runs DynamoDB Local in a network namespace of its own, with telemetry off", async () => {
    const { info, stackFile } = await testStack();
    expect(info.dynamodbIsolated).toBe(true);
    const stackDir = path.dirname(stackFile);
    // This stack's java: a DynamoDB Local whose parent (the supervisor) serves a socket in the stack's folder.
    const java = readdirSync('/proc').filter((pid) => /^\d+$/.test(pid)).find((pid) => {
      try {
        return cmdline(pid).some((a) => a.endsWith('DynamoDBLocal.jar')) && cmdline(parentOf(pid)).some((a) => a.startsWith(stackDir + path.sep));
      } catch {
        return false; // exited while we looked
      }
    });
    expect(java).toBeDefined();
    expect(cmdline(java!)).toContain('-disableTelemetry');
    expect(readlinkSync(`/proc/${java}/ns/net`)).not.toBe(readlinkSync('/proc/self/ns/net'));
  });

  it('lets no web page read DynamoDB Local through the browser (no CORS grant)', async () => {
    const { info } = await testStack();
    for (const origin of ['https://evil.example', 'null']) {
      const res = await fetch(info.dynamodbEndpoint, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
  });
});

/** One HTTP request to 127.0.0.1 with the Host header set by hand (what a rebound page would send). */
function sendWithHost(endpoint: string, host: string, init: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; type: string; body: string }> {
  const { port } = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: init.method ?? 'GET', path: init.path ?? '/', headers: { ...init.headers, Host: host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject).end(init.body);
  });
}

describe('DNS rebinding: the local listeners answer only loopback Host names', () => {
  const ssmGet = (name: string) => ({ method: 'POST', headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': 'AmazonSSM.GetParameter' }, body: JSON.stringify({ Name: name }) });
  const ddbList = { method: 'POST', headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'DynamoDB_20120810.ListTables' }, body: '{}' };
  const sqsList = { method: 'POST', headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'AmazonSQS.ListQueues' }, body: '{}' };

  it('refuses a foreign Host with 403 on the API, DynamoDB Local, fauxqs, the SSM stand-in and the mail capture\'s page', async () => {
    const { info } = await testStack();
    const cases = [
      { what: 'api', endpoint: info.apiUrl, init: { path: '/api/webhook/leads' } },
      { what: 'dynamodb', endpoint: info.dynamodbEndpoint, init: ddbList },
      { what: 'sqs', endpoint: info.sqsEndpoint, init: sqsList },
      { what: 'ssm', endpoint: info.ssmEndpoint!, init: ssmGet(info.settingsParameter!) },
      { what: 'mail capture', endpoint: info.mail!.inboxUrl!, init: { path: '/messages' } },
    ];
    for (const { what, endpoint, init } of cases) {
      const port = new URL(endpoint).port;
      for (const host of ['evil.example', `evil.example:${port}`, '127.0.0.1:1']) {
        expect({ what, host, status: (await sendWithHost(endpoint, host, init)).status }).toEqual({ what, host, status: 403 });
      }
      // The same request addressed to a loopback name is served.
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
        expect({ what, host, refused: (await sendWithHost(endpoint, host, init)).status === 403 }).toEqual({ what, host, refused: false });
      }
    }
    const api = await sendWithHost(info.apiUrl, 'evil.example', { path: '/api/webhook/leads' });
    expect(api.type).toBe('application/problem+json');
    expect(JSON.parse(api.body)).toMatchObject({ status: 403 });
    const ssm = await sendWithHost(info.ssmEndpoint!, 'evil.example', ssmGet(info.settingsParameter!));
    expect(ssm.body).not.toContain('retryScheduleSeconds'); // the settings document did not leak
  });
});
