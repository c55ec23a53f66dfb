/**
 * The deployable artifact, tested: the bundles and template `cdk synth` writes, run the way the
 * Lambda Node.js runtime runs them (lambda-harness.ts) against the local emulators. The local API
 * gateway and the stream/queue pollers of lib/local stand in for API Gateway and the event-source
 * mappings; every handler is the synthesized bundle in its own child process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, SQSBatchResponse } from 'aws-lambda';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { bulkMessages } from '../../functions/core/events/bulk-share.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { functions, secretName, secrets, type FunctionName, type QueueName, type SecretName, type TableName } from '../../lib/topology.js';
import { createDeps, type Deps } from '../../functions/core/platform/deps.js';
import { keys } from '../../functions/core/platform/model.js';
import { parseConfig } from '../../functions/core/platform/config.js';
import { mailerEnvVars } from '../../functions/core/platform/bindings.js';
import { createOrganization } from '../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../functions/core/tenancy/api-keys.js';
import { addEndpoint } from '../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../functions/core/delivery/redeliver.js';
import { mintSessionToken } from '../../functions/core/settings/session-token.js';
import { startDynamoDbLocal, startSqsEmulator, localCredentials, emulatorEnvironment, type Emulator } from '../../lib/local/emulators.js';
import { provisionTopology, type Provisioned } from '../../lib/local/provision.js';
import { startSsmStandIn, type SsmStandIn } from '../../lib/local/ssm-stand-in.js';
import { ensureSecretFile, startSecretsStandIn, type SecretsStandIn } from '../../lib/local/secrets-stand-in.js';
import { startHttpServer, type HttpHandler } from '../../lib/local/http-server.js';
import { StreamPoller } from '../../lib/local/stream-poller.js';
import { QueuePoller } from '../../lib/local/queue-poller.js';
import { Receiver } from '../integration/support/receiver.js';
import { eventually } from '../integration/support/stack.js';
import {
  LambdaContainer, bareImports, linkRuntimeModules, providedByRuntime, readTemplate, resolveEnvironment,
  runtimePackages, synthesize, synthesizedFunctions, taskFolder, type SynthesizedFunction, type Template,
} from './lambda-harness.js';

const REGION = 'us-east-1';

/** Whether an ESM import of `specifier` from `dir` resolves (a node child with an empty environment). */
function resolvesFrom(dir: string, specifier: string): boolean {
  const probe = spawnSync(process.execPath, ['--input-type=module', '-e', `import.meta.resolve(${JSON.stringify(specifier)})`], { cwd: dir, env: {} });
  return probe.status === 0;
}
const work = mkdtempSync(path.join(tmpdir(), 'crm-artifact-'));
const cdkOut = path.join(work, 'cdk.out');
const runtimeDir = path.join(work, 'runtime');

let template: Template;
let bundles: SynthesizedFunction[];
let dynamo: Emulator;
let sqsEmulator: Emulator;
let ssm: SsmStandIn;
let secretsManager: SecretsStandIn;
let secretFiles: Record<string, string>;
let provisioned: Provisioned;
let deps: Deps;
const containers = {} as Record<FunctionName, LambdaContainer>;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // Synth (bundling) and the emulators start in parallel: together ~10 s.
  const synth = synthesize(cdkOut);
  // The secrets the stack generates, served from files by the local Secrets Manager stand-in.
  const secretNames = Object.fromEntries(Object.keys(secrets).map((name) => [name, secretName('artifact', name as SecretName)])) as Record<SecretName, string>;
  secretFiles = Object.fromEntries(Object.keys(secrets).map((name) => [secretNames[name as SecretName], ensureSecretFile(path.join(work, `${name}.secret`))]));
  [dynamo, sqsEmulator, ssm, secretsManager] = await Promise.all([
    startDynamoDbLocal({ inMemory: true }), startSqsEmulator({}), startSsmStandIn(), startSecretsStandIn({ secrets: secretFiles }),
  ]);
  stops.push(() => dynamo.stop(), () => sqsEmulator.stop(), () => ssm.stop(), () => secretsManager.stop());
  const settings = parseConfig({ local: true, endpointCacheTtlSeconds: 0, keyCacheTtlSeconds: 0, retryJitter: 0 });
  deps = createDeps({
    region: REGION, dynamodbEndpoint: dynamo.endpoint, sqsEndpoint: sqsEmulator.endpoint, config: settings,
    tables: {} as Record<TableName, string>, queues: {} as Record<QueueName, string>,
  });
  provisioned = await provisionTopology(deps.dynamodb, deps.sqs, 'crm-artifact');
  Object.assign(deps.tables, provisioned.tables);
  Object.assign(deps.queues, provisioned.queues);
  await synth;

  template = readTemplate(cdkOut);
  bundles = synthesizedFunctions(cdkOut, template);
  linkRuntimeModules(runtimeDir);
  for (const fn of bundles) {
    taskFolder(runtimeDir, fn);
    // A secret's env var is a Ref to the stack's secret: here, the stand-in's secret of that name.
    const secretEnv = Object.fromEntries(Object.entries(secrets).filter(([, spec]) => spec.envVar in fn.environment).map(([name, spec]) => [spec.envVar, secretNames[name as SecretName]]));
    // A mailer's stack-given values (the API's URL, the SES configuration set): nothing local names them.
    const mailerEnv = Object.fromEntries(Object.values(mailerEnvVars).filter((envVar) => envVar in fn.environment).map((envVar) => [envVar, envVar === mailerEnvVars.publicApiUrl ? 'http://127.0.0.1:9' : 'crm-artifact']));
    const environment = { ...resolveEnvironment(template, Object.fromEntries(Object.entries(fn.environment).filter(([key]) => !(key in secretEnv) && !(key in mailerEnv))), provisioned), ...secretEnv, ...mailerEnv };
    // The settings document is read from the parameter the template names, as on Lambda.
    ssm.put(environment.SETTINGS_PARAMETER, JSON.stringify(settings));
    containers[fn.name] = await LambdaContainer.start(runtimeDir, fn, {
      ...environment,
      ...emulatorEnvironment(REGION, { dynamodb: dynamo.endpoint, sqs: sqsEmulator.endpoint, ssm: ssm.endpoint }),
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
    });
    stops.push(() => containers[fn.name].stop());
  }
}, 180_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  deps?.dynamodb.destroy();
  deps?.sqs.destroy();
  rmSync(work, { recursive: true, force: true });
});

describe('the synthesized bundles', () => {
  it('are one per function of the topology, for the Node.js 24 runtime', () => {
    expect(bundles.map((b) => b.name).sort()).toEqual(Object.keys(functions).sort());
    for (const fn of bundles) {
      expect(fn.runtime).toBe(runtimePackages.runtime);
      expect(existsSync(path.join(fn.assetDir, 'index.mjs'))).toBe(true);
    }
  });

  it('import nothing but node: builtins and packages the Lambda runtime provides', () => {
    for (const fn of bundles) {
      const imports = bareImports(readFileSync(path.join(fn.assetDir, 'index.mjs'), 'utf8'));
      expect(imports.length).toBeGreaterThan(0);
      expect({ function: fn.name, notProvided: imports.filter((s) => !providedByRuntime(s)) }).toEqual({ function: fn.name, notProvided: [] });
    }
  });

  it('run where only the runtime packages resolve', () => {
    // No node_modules above the task folders but the runtime's own.
    for (let dir = path.dirname(runtimeDir); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    }
    expect(existsSync(path.join(path.parse(runtimeDir).root, 'node_modules'))).toBe(false);
    // From a task folder the SDK resolves and the project's other packages do not.
    const task = path.join(runtimeDir, bundles[0].name);
    expect(resolvesFrom(task, '@aws-sdk/client-dynamodb')).toBe(true);
    for (const bundled of ['zod', '@middy/core', '@aws-lambda-powertools/logger', 'libphonenumber-js']) expect(resolvesFrom(task, bundled)).toBe(false);
  });
});

describe('the bundles against the local emulators', () => {
  const receiver = new Receiver();
  let apiUrl: string;
  let apiKey: string;
  let organizationId: string;
  let endpointPath: string;
  let endpointId: string;

  beforeAll(async () => {
    await receiver.start();
    stops.push(() => receiver.stop());
    const http = await startHttpServer({
      port: 0,
      handlers: {
        leadIntake: ((event) => containers.leadIntake.invoke(event)) as HttpHandler,
        settingsApi: ((event) => containers.settingsApi.invoke(event)) as HttpHandler,
      },
    });
    stops.push(() => http.close());
    apiUrl = http.url;
    const org = await createOrganization(deps, { name: 'Artifact Plumbing', plan: 'pro' });
    organizationId = org.id;
    apiKey = (await createApiKey(deps, org.id, 'artifact')).key;
    const { secret, endpoint } = await addEndpoint(deps, org.id, { url: receiver.url + '/hook', events: 'client.created' });
    endpointId = endpoint.id;
    endpointPath = new URL(receiver.script('/hook', secret, { status: 204 })).pathname;
  });

  it('GET /settings serves the settings page and its assets from the files copied next to index.mjs', async () => {
    const settingsBundle = bundles.find((b) => b.name === 'settingsApi')!;
    expect(existsSync(path.join(settingsBundle.assetDir, 'page', 'settings.html'))).toBe(true);
    const page = await fetch(`${apiUrl}/settings`);
    const html = await page.text();
    expect({ status: page.status, type: page.headers.get('content-type') }).toEqual({ status: 200, type: 'text/html; charset=utf-8' });
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    // The HTML names its assets, and each module its imports, with a content hash (page.ts); otherwise the files as written.
    const unversioned = (text: string) => text.replace(/\?v=(\{\{\w+\}\}|[0-9a-f]+)/g, '');
    expect(unversioned(html)).toBe(unversioned(readFileSync('functions/settings-api/page/settings.html', 'utf8')));
    const assets = [...html.matchAll(/"(settings\/(settings\.(?:js|css))\?v=[0-9a-f]+)"/g)];
    expect(assets.map(([, , file]) => file).sort()).toEqual(['settings.css', 'settings.js']);
    const modules = readdirSync('functions/settings-api/page').filter((f) => f.endsWith('.js'));
    for (const file of ['settings.css', ...modules]) {
      const res = await fetch(new URL(`settings/${file}`, `${apiUrl}/settings`));
      expect({ file, status: res.status }).toEqual({ file, status: 200 });
      expect(unversioned(await res.text())).toBe(readFileSync(`functions/settings-api/page/${file}`, 'utf8'));
    }
  });

  it('GET /api/settings answers a session token signed with the secret the bundle reads from Secrets Manager', async () => {
    const secret = readFileSync(secretFiles[secretName('artifact', 'settingsToken')], 'utf8');
    const token = await mintSessionToken(secret, { organizationId, userId: 'artifact', ttlSeconds: 300 });
    const res = await fetch(`${apiUrl}/api/settings`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ organization: { id: organizationId } });
  });

  it('GET /api/webhook/leads answers 200 for the key', async () => {
    const res = await fetch(`${apiUrl}/api/webhook/leads`, { headers: { 'X-API-Key': apiKey } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ organization: { id: organizationId } });
  });

  it('POST creates the lead (read back from DynamoDB Local); fan-out queues its event; delivery signs and sends it', async () => {
    const res = await fetch(`${apiUrl}/api/webhook/leads`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Ada Lovelace', email: 'ada@example.com', phone: '+14155550123' }),
    });
    const text = await res.text();
    expect({ status: res.status, body: text }).toMatchObject({ status: 201 });
    const lead = JSON.parse(text) as { id: string };
    const stored = await deps.doc.send(new GetCommand({ TableName: deps.tables.clients, Key: keys.client(organizationId, lead.id) }));
    expect(stored.Item).toMatchObject({ email: 'ada@example.com' });

    // Lambda's event-source mappings, played by the local pollers, invoking the bundles.
    const streams = new DynamoDBStreamsClient({ region: REGION, endpoint: dynamo.endpoint, credentials: localCredentials });
    const fanOutBatches: unknown[] = [];
    const streamPoller = new StreamPoller({
      streams, streamArn: provisioned.streams.clients!, batchSize: 100, maxRetries: 0, bisectOnError: false,
      handler: async (event) => {
        const response = await containers.eventFanout.invoke<DynamoDBBatchResponse>(event);
        fanOutBatches.push(response);
        return response;
      },
      idleDelayMs: 50,
    });
    const queuePoller = new QueuePoller({
      sqs: deps.sqs, queueUrl: provisioned.queues.deliveryQueue, queueArn: provisioned.queueArns.deliveryQueue,
      batchSize: 10, waitTimeSeconds: 1, handler: (event) => containers.webhookDelivery.invoke(event),
    });
    streamPoller.start();
    queuePoller.start();
    try {
      const received = await eventually(async () => receiver.on(endpointPath)[0], { what: 'the client.created webhook' });
      expect(received.verifyError).toBeUndefined();
      expect(received.event).toMatchObject({ type: 'client.created', organization_id: organizationId, data: { object: { id: lead.id } } });
      expect(fanOutBatches).toContainEqual({ batchItemFailures: [] });
      const [delivery] = await eventually(async () => {
        const items = await listDeliveries(deps, organizationId);
        return items.length > 0 && items[0].status === 'delivered' && items;
      }, { what: 'the delivery recorded as delivered' });
      expect(delivery).toMatchObject({ status: 'delivered', eventType: 'client.created' });
    } finally {
      await Promise.all([streamPoller.stop(), queuePoller.stop()]);
      streams.destroy();
    }
  });

  it('the bulk fan-out bundle records and queues an import’s bulk message: its deliveries in the deliveries table, their messages on the delivery queue (after the lead, whose pollers are stopped)', async () => {
    const events = ['cli_bulk1', 'cli_bulk2'].map((id) => ({ id: `evt_artifact_${id}`, type: 'client.created', organization_id: organizationId, created_at: new Date().toISOString(), data: { object: { id } } }));
    const [message] = bulkMessages(events.map((event) => ({ event: event as never, endpoint: { id: endpointId, enabled: true } })));
    const response = await containers.bulkFanout.invoke<SQSBatchResponse>({ Records: [{ messageId: 'm-1', receiptHandle: 'r-1', body: JSON.stringify(message), attributes: {}, eventSource: 'aws:sqs' }] });
    expect(response).toEqual({ batchItemFailures: [] });
    // A pending delivery has no record until its first outcome writes it (docs/decisions.md): the bulk
    // fan-out writes each event's item, naming the endpoint it was queued to, once its messages are sent.
    for (const event of events) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.event(organizationId, event.id) }));
      expect({ event: event.id, endpoints: Item?.endpointIds }).toEqual({ event: event.id, endpoints: [endpointId] });
    }
    // Visible, or taken by the stopped poller's last long poll (the emulator may answer it after the client gave up).
    const { Attributes = {} } = await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: provisioned.queues.deliveryQueue, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    expect(Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible)).toBeGreaterThanOrEqual(2);
  });

  it('the delivery statistics bundle counts a delivery record’s change from a stream batch: its counters read back from DynamoDB Local', async () => {
    const at = new Date().toISOString();
    const image = (status: string, attempts: object[]) => marshall({
      pk: `ORG#${organizationId}`, sk: 'DELIVERY#dlv_artifact_stats', organizationId, endpointId: 'ep_artifact_stats', status, attempts, updatedAt: at,
    });
    const attempt = { at, attempt: 1, statusCode: 200, latencyMs: 42 };
    await containers.deliveryStatistics.invoke({ Records: [{
      eventID: '1', eventName: 'MODIFY', eventSource: 'aws:dynamodb', eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/deliveries/stream/x',
      dynamodb: { Keys: marshall({ pk: `ORG#${organizationId}`, sk: 'DELIVERY#dlv_artifact_stats' }), OldImage: image('pending', []), NewImage: image('delivered', [attempt]), SequenceNumber: '1', StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }] });
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: { pk: `STATS#${organizationId}`, sk: `ENDPOINT#ep_artifact_stats#${at.slice(0, 13)}` } }));
    expect(Item).toMatchObject({ delivered: 1, l0: 1 });
  });
});
