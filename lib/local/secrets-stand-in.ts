/**
 * A local stand-in for AWS Secrets Manager: a tiny HTTP server on 127.0.0.1 speaking its JSON
 * protocol (`X-Amz-Target: secretsmanager.GetSecretValue`, application/x-amz-json-1.1) for the one
 * action the system uses. Each secret's value is read from its file on every request (the file is
 * the local stack's store: replacing it is a rotation), so the handlers read the secret exactly as
 * on Lambda (the secret's name in env + AWS_ENDPOINT_URL_SECRETS_MANAGER) and cache it the same way.
 * Errors have AWS's shape (`{"__type":"ResourceNotFoundException",…}`, HTTP 400). Signatures are not checked.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBase62 } from '../../functions/core/platform/ids.js';
import { isLoopbackHost, foreignHostMessage, listenOnLoopback } from './loopback-host.js';

export interface SecretsStandIn {
  /** http://127.0.0.1:PORT: the value of AWS_ENDPOINT_URL_SECRETS_MANAGER. */
  endpoint: string;
  requests(): number;
  stop(): Promise<void>;
}

/**
 * The file holding a generated secret (64 base62 characters, like the stack's generated one),
 * created owner-only (0600) when absent; an existing file is kept, so links minted before a
 * restart stay valid.
 */
export function ensureSecretFile(file: string): string {
  if (!existsSync(file)) writeFileSync(file, randomBase62(64), { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return file;
}

export async function startSecretsStandIn(options: { secrets: Record<string, string>; port?: number }): Promise<SecretsStandIn> {
  let requests = 0;
  let port = 0;
  const answer = (res: ServerResponse, status: number, body: unknown, errorType?: string) => {
    res.writeHead(status, { 'Content-Type': 'application/x-amz-json-1.1', 'x-amzn-RequestId': randomUUID(), ...(errorType ? { 'x-amzn-ErrorType': errorType } : {}) });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, type: string, message: string) => answer(res, 400, { __type: type, message }, type);
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!isLoopbackHost(req.headers.host, port)) return answer(res, 403, { __type: 'AccessDeniedException', message: foreignHostMessage }, 'AccessDeniedException');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    requests++;
    if (req.method !== 'POST' || req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue') return fail(res, 'UnknownOperationException', `Unsupported operation ${String(req.headers['x-amz-target'] ?? '(none)')}.`);
    let input: { SecretId?: unknown };
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      return fail(res, 'SerializationException', 'The request body is not valid JSON.');
    }
    const name = String(input.SecretId ?? '');
    const file = options.secrets[name];
    if (!file || !existsSync(file)) return fail(res, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    answer(res, 200, {
      ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-local`,
      Name: name,
      SecretString: readFileSync(file, 'utf8').trim(),
      VersionId: 'local',
      VersionStages: ['AWSCURRENT'],
      CreatedDate: Date.now() / 1000,
    });
  };
  const server = createServer((req, res) => void handle(req, res).catch((e: Error) => answer(res, 500, { __type: 'InternalServiceError', message: e.message }, 'InternalServiceError')));
  port = await listenOnLoopback(server, options.port ?? 0);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests: () => requests,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
