/**
 * A local stand-in for SSM Parameter Store: a tiny HTTP server on 127.0.0.1 that speaks the SSM
 * JSON protocol (`X-Amz-Target: AmazonSSM.<Action>`, application/x-amz-json-1.1) for the three
 * actions the system uses: GetParameter, GetParameters and PutParameter. The handlers read their
 * settings through it exactly as on Lambda (SETTINGS_PARAMETER + AWS_ENDPOINT_URL_SSM), so the
 * settings cache and its refresh are exercised locally. Errors have AWS's shape
 * (`{"__type":"ParameterNotFound","message":…}`, HTTP 400). Signatures are not checked.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isLoopbackHost, foreignHostMessage, listenOnLoopback } from './loopback-host.js';

const REGION = 'us-east-1';
const ACCOUNT = '000000000000';

interface StoredParameter { name: string; type: string; value: string; version: number; lastModified: number }

export interface SsmStandIn {
  /** http://127.0.0.1:PORT: the value of AWS_ENDPOINT_URL_SSM. */
  endpoint: string;
  port: number;
  /** PutParameter without the network (overwrites; bumps the version). */
  put(name: string, value: string, type?: string): number;
  get(name: string): string | undefined;
  /** Answers this AWS error to the next `times` requests (default: every one until cleared with undefined). */
  failWith(error: { type: string; status: number; message?: string } | undefined, times?: number): void;
  /** Requests received so far (tests of caching and retries). */
  readonly requests: number;
  stop(): Promise<void>;
}

class SsmError extends Error {
  constructor(readonly type: string, message: string, readonly status = 400) {
    super(message);
  }
}

export async function startSsmStandIn(options: { port?: number; parameters?: Record<string, string> } = {}): Promise<SsmStandIn> {
  const store = new Map<string, StoredParameter>();
  let failure: { type: string; status: number; message?: string } | undefined;
  let failuresLeft = Infinity;
  let requests = 0;

  const put = (name: string, value: string, type = 'String', overwrite = true): number => {
    if (!name) throw new SsmError('ValidationException', 'Parameter name must not be empty.');
    if (typeof value !== 'string' || value.length === 0) throw new SsmError('ValidationException', 'Parameter value must not be empty.');
    const existing = store.get(name);
    if (existing && !overwrite) throw new SsmError('ParameterAlreadyExists', 'The parameter already exists. To overwrite this value, set the overwrite option in the request to true.');
    const version = (existing?.version ?? 0) + 1;
    store.set(name, { name, type, value, version, lastModified: Date.now() });
    return version;
  };
  for (const [name, value] of Object.entries(options.parameters ?? {})) put(name, value);

  const view = (p: StoredParameter) => ({
    Name: p.name,
    Type: p.type,
    Value: p.value,
    Version: p.version,
    LastModifiedDate: p.lastModified / 1000,
    ARN: `arn:aws:ssm:${REGION}:${ACCOUNT}:parameter${p.name.startsWith('/') ? '' : '/'}${p.name}`,
    DataType: 'text',
  });

  const actions: Record<string, (input: Record<string, unknown>) => unknown> = {
    GetParameter: (input) => {
      const name = String(input.Name ?? '');
      const found = store.get(name);
      if (!found) throw new SsmError('ParameterNotFound', `Parameter ${name} not found.`);
      return { Parameter: view(found) };
    },
    GetParameters: (input) => {
      const names = Array.isArray(input.Names) ? input.Names.map(String) : [];
      if (names.length === 0 || names.length > 10) throw new SsmError('ValidationException', 'Names must hold 1 to 10 parameter names.');
      return {
        Parameters: names.filter((n) => store.has(n)).map((n) => view(store.get(n)!)),
        InvalidParameters: names.filter((n) => !store.has(n)),
      };
    },
    PutParameter: (input) => {
      const version = put(String(input.Name ?? ''), input.Value as string, String(input.Type ?? 'String'), input.Overwrite === true);
      return { Version: version, Tier: 'Standard' };
    },
  };

  const answer = (res: ServerResponse, status: number, body: unknown, errorType?: string) => {
    res.writeHead(status, {
      'Content-Type': 'application/x-amz-json-1.1',
      'x-amzn-RequestId': crypto.randomUUID(),
      ...(errorType ? { 'x-amzn-ErrorType': errorType } : {}),
    });
    res.end(JSON.stringify(body));
  };

  let port = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // A rebound web page must not PutParameter (e.g. open the SSRF allow-list) nor read settings.
    if (!isLoopbackHost(req.headers.host, port)) return answer(res, 403, { __type: 'AccessDeniedException', message: foreignHostMessage }, 'AccessDeniedException');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const target = String(req.headers['x-amz-target'] ?? '');
    const action = target.startsWith('AmazonSSM.') ? target.slice('AmazonSSM.'.length) : '';
    requests++;
    try {
      if (failure && failuresLeft-- > 0) throw new SsmError(failure.type, failure.message ?? failure.type, failure.status);
      if (req.method !== 'POST' || !actions[action]) throw new SsmError('UnknownOperationException', `Unsupported operation ${target || '(none)'}.`);
      let input: Record<string, unknown>;
      try {
        input = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      } catch {
        throw new SsmError('SerializationException', 'The request body is not valid JSON.');
      }
      answer(res, 200, actions[action](input));
    } catch (error) {
      const e = error instanceof SsmError ? error : new SsmError('InternalServerError', (error as Error).message, 500);
      answer(res, e.status, { __type: e.type, message: e.message }, e.type);
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  port = await listenOnLoopback(server, options.port ?? 0);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    put: (name, value, type) => put(name, value, type),
    get: (name) => store.get(name)?.value,
    failWith: (f, times = Infinity) => {
      failure = f;
      failuresLeft = times;
    },
    get requests() {
      return requests;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
