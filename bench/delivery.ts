/**
 * `npm run bench:delivery`: events end to end on the local stack. N client items are written to
 * the clients table; the stream → fan-out → queue → delivery pipeline signs and POSTs them to a
 * receiver on loopback that verifies every request with `standardwebhooks`. In the same run, a
 * plain loop signs and POSTs the same number of payloads at the same concurrency. Prints
 * deliveries/s, write-to-receipt p50/p99 and the ratio. Flags: --events N (500).
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { startLocalStack } from '../lib/local/stack.js';
import { createOrganization } from '../functions/core/tenancy/organizations.js';
import { addEndpoint } from '../functions/core/delivery/endpoints.js';
import { keys } from '../functions/core/platform/model.js';
import { signatureHeaders } from '../functions/core/delivery/signing.js';
import { postWebhook } from '../functions/core/delivery/http-client.js';
import { functions } from '../lib/topology.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '500' } } });
const total = Number(values.events);
const source = functions.webhookDelivery.events[0];
// What the local queue poller runs at once: its concurrency × batch size (lib/local/stack.ts).
const concurrency = Math.min(source.kind === 'queue' ? source.maxConcurrency : 1, 4) * (source.kind === 'queue' ? source.batchSize : 1);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-')), inMemory: true, port: 0, seed: false });
  let secret = '';
  const latencies: number[] = [];
  let verified = 0;
  let rejected = 0;
  let onDone: () => void = () => undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        const event = new Webhook(secret.slice(6)).verify(body, req.headers as Record<string, string>) as { data: { object: { created_at: string } } };
        verified++;
        if (req.url === '/pipeline') latencies.push(Date.now() - Date.parse(event.data.object.created_at));
      } catch {
        rejected++;
      }
      res.writeHead(204).end();
      if (req.url === '/pipeline' && latencies.length === total) onDone();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const { deps } = stack;
    const org = await createOrganization(deps, { name: 'Bench Deliveries' });
    secret = (await addEndpoint(deps, org.id, { url: `${base}/pipeline`, events: 'client.created' })).secret;

    const done = new Promise<void>((r) => (onDone = r));
    const started = Date.now();
    for (let i = 0; i < total; i += 25) {
      const at = new Date().toISOString();
      await deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.clients]: Array.from({ length: Math.min(25, total - i) }, (_, n) => {
        const id = `cli_bench${String(i + n).padStart(6, '0')}`;
        return { PutRequest: { Item: { ...keys.client(org.id, id), entity: 'client', id, organization_id: org.id, status: 'lead', first_name: 'Bench', sms_consent: false, created_at: at, updated_at: at } } };
      }) } }));
    }
    await done;
    const pipelineSeconds = (Date.now() - started) / 1000;
    latencies.sort((a, b) => a - b);

    // The same work without the pipeline: sign and POST at the same concurrency.
    const body = JSON.stringify({ id: 'evt_plain', type: 'client.created', data: { object: { created_at: new Date().toISOString() } } });
    let next = 0;
    const plainStarted = Date.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const headers = signatureHeaders({ id: `evt_plain${next}`, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
        const result = await postWebhook({ url: `${base}/plain`, headers, body, timeoutMs: 10_000, allow: ['127.0.0.0/8'] });
        if (!result.ok) throw new Error(`plain POST failed: ${result.error}`);
      }
    }));
    const plainSeconds = (Date.now() - plainStarted) / 1000;

    console.log(`${total} events, delivery concurrency ${concurrency}; ${verified} requests verified, ${rejected} rejected`);
    console.log(`pipeline (table write → stream → fan-out → SQS → signed POST): ${(total / pipelineSeconds).toFixed(0)} deliveries/s, write-to-receipt p50 ${pct(latencies, 0.5)} ms, p99 ${pct(latencies, 0.99)} ms`);
    console.log(`plain signed-POST loop: ${(total / plainSeconds).toFixed(0)} POSTs/s`);
    console.log(`ratio pipeline ÷ plain: ${(plainSeconds / pipelineSeconds).toFixed(2)}`);
  } finally {
    server.closeAllConnections();
    server.close();
    await stack.stop();
  }
}

await main();
