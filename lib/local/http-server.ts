/**
 * The local API Gateway: turns HTTP requests on the topology's routes into REST API (v1) proxy
 * events for the real handlers, answers CORS preflights itself (as API Gateway's OPTIONS mock
 * does), and 404/405/413 with the same problem+json the functions use.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { routes, cors, type RouteSpec } from '../topology.js';
import { DomainError, methodNotAllowed, notFound, payloadTooLarge, toProblem } from '../../functions/core/errors.js';
import { lambdaContext } from './lambda-context.js';
import { openApiDocument } from '../../functions/core/openapi.js';

export type HttpHandler = (event: APIGatewayProxyEvent, context: ReturnType<typeof lambdaContext>) => Promise<APIGatewayProxyResult>;

/** API Gateway's hard payload limit; the function enforces its own, smaller one. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;

const corsHeaders = {
  'Access-Control-Allow-Origin': cors.allowOrigins.join(','),
  'Access-Control-Expose-Headers': cors.exposeHeaders.join(','),
};

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { ...headers, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function sendProblem(res: ServerResponse, error: DomainError, requestId: string): void {
  const { problem, headers } = toProblem(error, requestId);
  send(res, problem.status, { 'Content-Type': 'application/problem+json', 'X-Request-Id': requestId, ...corsHeaders, ...headers }, JSON.stringify(problem));
}

async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > GATEWAY_MAX_BODY) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function toProxyEvent(req: IncomingMessage, route: RouteSpec, body: Buffer, requestId: string): APIGatewayProxyEvent {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) {
    query[k] = v;
    (multiQuery[k] ??= []).push(v);
  }
  const hasQuery = Object.keys(query).length > 0;
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return {
    resource: route.path,
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: null,
    stageVariables: null,
    body: body.length > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      path: `/local${url.pathname}`,
      stage: 'local',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: route.path,
      identity: {
        sourceIp,
        userAgent: req.headers['user-agent'] ?? null,
        accessKey: null, accountId: null, apiKey: null, apiKeyId: null, caller: null, clientCert: null,
        cognitoAuthenticationProvider: null, cognitoAuthenticationType: null, cognitoIdentityId: null,
        cognitoIdentityPoolId: null, principalOrgId: null, user: null, userArn: null,
      },
    },
  };
}

export interface LocalApiOptions {
  port: number;
  /** Handlers by topology function name. */
  handlers: Record<string, HttpHandler>;
  onError?: (error: unknown) => void;
}

export async function startHttpServer(options: LocalApiOptions): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const requestId = randomUUID();
    try {
      const pathname = new URL(req.url ?? '/', 'http://local').pathname;
      if (pathname === '/openapi.json' && req.method === 'GET') {
        // The API reference, generated from the same zod schemas the handler validates with.
        return send(res, 200, { 'Content-Type': 'application/json', ...corsHeaders }, JSON.stringify(openApiDocument(`http://${req.headers.host ?? '127.0.0.1'}`), null, 2));
      }
      const onPath = routes.filter((r) => r.path === pathname);
      if (onPath.length === 0) return sendProblem(res, notFound(`No route for ${pathname}.`), requestId);
      const allowed = [...new Set(onPath.map((r) => r.method))];
      if (req.method === 'OPTIONS') {
        // The CORS preflight needs no key (DESIGN §6 Browsers).
        return send(res, 204, {
          ...corsHeaders,
          'Access-Control-Allow-Methods': [...allowed, 'OPTIONS'].join(','),
          'Access-Control-Allow-Headers': cors.allowHeaders.join(','),
          'Access-Control-Max-Age': String(cors.maxAgeSeconds),
        }, '');
      }
      const route = onPath.find((r) => r.method === req.method);
      if (!route) return sendProblem(res, methodNotAllowed(allowed), requestId);
      const body = await readBody(req);
      if (body === 'too-large') return sendProblem(res, payloadTooLarge(GATEWAY_MAX_BODY), requestId);
      const handler = options.handlers[route.function];
      const result = await handler(toProxyEvent(req, route, body, requestId), lambdaContext(route.function));
      const headers: Record<string, string | string[]> = { ...(result.headers as Record<string, string>) };
      for (const [k, v] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = v.map(String);
      const payload = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body ?? '');
      res.writeHead(result.statusCode, { ...headers, 'Content-Length': payload.length });
      res.end(payload);
    } catch (error) {
      options.onError?.(error);
      const { problem } = toProblem(error, requestId);
      if (!res.headersSent) send(res, 500, { 'Content-Type': 'application/problem+json', ...corsHeaders }, JSON.stringify(problem));
      else res.destroy();
    }
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'EADDRINUSE' ? new Error(`Port ${options.port} on 127.0.0.1 is in use: set PORT or --port to another.`) : e),
    );
    server.listen(options.port, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
