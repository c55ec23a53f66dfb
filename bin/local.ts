/**
 * `npm start`: the whole system on this machine (docs/local-stack.md). Ctrl-C or SIGTERM stops everything.
 */
import { parseArgs } from 'node:util';
import path from 'node:path';
import { startLocalStack } from '../lib/local/stack.js';
import { defaultStackFile } from '../lib/local/stack-file.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: '.local' },
    'in-memory': { type: 'boolean', default: false },
    port: { type: 'string', default: process.env.PORT ?? '3000' },
    'dynamodb-port': { type: 'string', default: process.env.DYNAMODB_PORT ?? '0' },
    'sqs-port': { type: 'string', default: process.env.SQS_PORT ?? '0' },
    quiet: { type: 'boolean', default: false },
    'expose-dynamodb': { type: 'boolean', default: false },
    'clients-per-address': { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  console.log(`Usage: npm start -- [--port 3000] [--dir .local] [--in-memory] [--dynamodb-port N] [--sqs-port N] [--quiet] [--expose-dynamodb] [--clients-per-address N]
Runs DynamoDB Local, the fauxqs SQS emulator, the API on 127.0.0.1 and the event pollers.
DynamoDB Local runs in a private network namespace; where the machine cannot give it one, it would
listen on every interface, and the stack refuses to start unless --expose-dynamodb (or
CRM_ALLOW_EXPOSED_DYNAMODB=1) accepts that (see docs/local-stack.md).
Writes <dir>/stack.json for the CLI (npx crm ...). PORT, DYNAMODB_PORT, SQS_PORT env vars also apply;
CRM_SETTINGS (JSON) is written into the local SSM parameter at start (the handlers read it there).
--clients-per-address N multiplies the WAF's per-address limits (default 1, as deployed), for when
one address stands for many callers (the test suite).
Notices are sent to a local mail capture (its page is printed at start); CRM_SMTP_URL=smtp://host:port
sends them to that SMTP server instead.`);
  process.exit(0);
}

function port(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`error: --${name} must be a port number (0-65535), got "${value}"`);
    process.exit(2);
  }
  return n;
}

const clientsPerAddress = Number(values['clients-per-address']);
if (!Number.isInteger(clientsPerAddress) || clientsPerAddress < 1) {
  console.error(`error: --clients-per-address must be a whole number ≥ 1, got "${values['clients-per-address']}"`);
  process.exit(2);
}

const quiet = values.quiet;
const log = (line: string) => (quiet ? undefined : console.log(line));
if (quiet) process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
let userSettings: Record<string, unknown> = {};
if (process.env.CRM_SETTINGS) {
  try {
    userSettings = JSON.parse(process.env.CRM_SETTINGS);
  } catch {
    console.error('error: CRM_SETTINGS is not valid JSON');
    process.exit(2);
  }
}

const started = Date.now();
log('Starting the local stack…');
const stack = await startLocalStack({
  dir: values.dir,
  inMemory: values['in-memory'],
  port: port('port', values.port),
  dynamodbPort: port('dynamodb-port', values['dynamodb-port']),
  sqsPort: port('sqs-port', values['sqs-port']),
  exposeDynamoDb: values['expose-dynamodb'] || undefined, // else CRM_ALLOW_EXPOSED_DYNAMODB decides
  settings: userSettings,
  clientsPerAddress,
  smtpUrl: process.env.CRM_SMTP_URL || undefined,
  log: (line) => console.error(line),
}).catch((error: Error) => {
  console.error(`error: ${error.message}`);
  process.exit(1);
});

const { info } = stack;
const url = `${info.apiUrl}/api/webhook/leads`;
/**
 * The CLI as the banner prints it: it finds .local/stack.json in the folder it runs in by itself;
 * another --dir is named, so every command below works when pasted (from this folder).
 */
const quote = (text: string) => (/^[\w./:@-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`);
const crm = path.resolve(stack.stackFile) === defaultStackFile() ? 'npx crm' : `CRM_STACK_FILE=${quote(path.resolve(stack.stackFile))} npx crm`;
log(`
CRM integration API running (ready in ${((Date.now() - started) / 1000).toFixed(1)} s)
  API            ${url}
  DynamoDB Local ${info.dynamodbEndpoint}${info.dynamodbIsolated ? '' : '   (listening on every interface: see docs/local-stack.md)'}
  SQS (fauxqs)   ${info.sqsEndpoint}
  SSM stand-in   ${info.ssmEndpoint}   settings: ${info.settingsParameter}
  Secrets        ${info.secretsEndpoint}   Secrets Manager stand-in: ${values.dir}/*.secret
  Mail           ${info.mail?.inboxUrl ? `${info.mail.inboxUrl}   captured notices (SMTP ${info.mail.smtpUrl}; JSON: ${info.mail.inboxUrl}/messages)` : `sent to ${info.mail?.smtpUrl} (CRM_SMTP_URL)`}
  stack file     ${stack.stackFile}`);
if (info.demo) {
  log(`
Demo organization ${info.demo.organizationId}
  API key        ${info.demo.apiKey}

Check the key:
  curl -s ${url} -H "X-API-Key: ${info.demo.apiKey}"

Send a lead:
  curl -s ${url} \\
    -H "Authorization: Bearer ${info.demo.apiKey}" \\
    -H "Content-Type: application/json" \\
    -d '{"name":"Ada Lovelace","email":"ada@example.com","phone":"+1 415 555 0100","service":"Leaky faucet"}'

Organization settings (keys, webhooks, deliveries; link valid 1 h, a new one: ${crm} settings-link --org ${info.demo.organizationId}):
  ${info.demo.settingsUrl ?? '(not available)'}

Admin CLI: ${crm} --help   (e.g. ${crm} logs --org ${info.demo.organizationId})`);
}
log('\nCtrl-C to stop.');

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log(`\n${signal}: stopping…`);
  await stack.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
