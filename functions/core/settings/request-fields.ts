/**
 * What every operation of the settings API shares (handle-settings-request.ts runs them): the
 * request context, and reading a body or a query the same way everywhere, with its route's zod
 * schemas (request-schemas.ts): a misspelt field, a bad time, a foreign cursor is a 422 with the
 * field named, never ignored.
 */
import type { Deps } from '../platform/deps.js';
import { validationFailed, type FieldError } from '../platform/errors.js';
import { readJsonBody, type HttpRequest } from '../platform/http-request.js';
import type { Organization } from '../platform/model.js';
import type { AuditAction } from './audit-log.js';
import type { Session } from './session-token.js';
import { MAX_CURSOR_CHARS, requestSchemas, type RequestSchemas } from './request-schemas.js';

export { MAX_CURSOR_CHARS };
const MAX_BODY_BYTES = 16 * 1024;
/** Rows a page holds when the query names no `limit`. */
export const DEFAULT_PAGE_ROWS = 50;

export interface Context {
  deps: Deps;
  request: HttpRequest;
  session: Session;
  organization: Organization;
  params: Record<string, string>;
  /** The body as its route's schema validated it (request-schemas.ts BodyOf); `{}` for a route that reads none. */
  body: Record<string, unknown>;
  /** The query as its route's schema validated it (request-schemas.ts QueryOf); `{}` for a route that reads none. */
  query: Record<string, unknown>;
  /** Records a change in the audit log as the session's user. */
  audit(action: AuditAction, targetId?: string, detail?: Record<string, unknown>): Promise<unknown>;
}
export type Answer = { status: number; body: unknown };
export type Operation = (c: Context) => Promise<Answer>;

/**
 * The body and query of a request to `route` (`METHOD resource`), validated with its schemas
 * (request-schemas.ts): a 422 naming every bad field, unknown ones included. A route without a
 * body schema reads no body; without a query schema, no query.
 */
export function readRequest(route: string, request: HttpRequest): { body: Record<string, unknown>; query: Record<string, unknown> } {
  const schemas: RequestSchemas = (requestSchemas as Record<string, RequestSchemas>)[route] ?? {};
  const errors: FieldError[] = [];
  const parsed = (schema: RequestSchemas['body'], value: unknown, prefix: string[]) => {
    if (!schema) return {};
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    errors.push(...fieldErrors(result.error.issues, prefix));
    return {};
  };
  const raw = schemas.body ? objectBody(request, schemas.bodyRequired === false) : {};
  // zod drops an own `__proto__` key silently (a header named so would vanish with a 200): named here instead.
  errors.push(...protoKeys(raw, []).map((path) => ({ field: path.join('.'), message: '"__proto__" cannot be a name here: choose another name' })));
  const body = schemas.body ? parsed(schemas.body, raw, []) : {};
  // A parameter given empty (`?status=`) is not given: the page's blank filters.
  const query = parsed(schemas.query, Object.fromEntries(Object.entries(request.query ?? {}).filter(([, v]) => v !== '')), []);
  if (errors.length) throw validationFailed(errors);
  return { body, query };
}

/** The paths of every own `__proto__` key in a parsed JSON value. */
function protoKeys(value: unknown, path: string[]): string[][] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.keys(value).flatMap((key) => [
    ...(key === '__proto__' ? [[...path, key]] : []),
    ...protoKeys((value as Record<string, unknown>)[key], [...path, key]),
  ]);
}

interface Issue { code: string; path: PropertyKey[]; message: string; keys?: string[] }
/** zod's issues as the API's field errors: an unknown field by its own name; a message once per field (two checks may say the same). */
function fieldErrors(issues: readonly Issue[], prefix: string[]): FieldError[] {
  const errors = issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') return (issue.keys ?? []).map((key) => ({ field: [...path, key].join('.'), message: 'is not a field of this request' }));
    return [{ field: path.join('.') || '(body)', message: issue.message }];
  });
  return errors.filter((e, i) => errors.findIndex((o) => o.field === e.field && o.message === e.message) === i);
}

function objectBody(request: HttpRequest, optional: boolean): Record<string, unknown> {
  const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : request.body ?? '';
  if (optional && raw.trim() === '') return {};
  const body = readJsonBody(request, MAX_BODY_BYTES);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationFailed([{ field: '(body)', message: 'must be a JSON object' }]);
  return body as Record<string, unknown>;
}

/** A validated time (request-schemas.ts: ISO 8601, any offset) as the index keys hold them: UTC, milliseconds. */
export function timeOf(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw validationFailed([{ field, message: 'must be an ISO-8601 time' }]);
  return new Date(t).toISOString();
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DELIVERY_ID = /^dlv_[A-Za-z0-9_-]{1,64}$/;
export const encodeCursor = (d: { createdAt: string; id: string }) => Buffer.from(JSON.stringify([d.createdAt, d.id])).toString('base64url');
export function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const [createdAt, id] = cursor.length <= MAX_CURSOR_CHARS ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[] : [];
    // Exactly what encodeCursor writes: an ISO time and a delivery id (a hand-made one never reaches the index).
    if (typeof createdAt === 'string' && typeof id === 'string' && ISO_TIME.test(createdAt) && DELIVERY_ID.test(id)) return { createdAt, id };
  } catch { /* answered below */ }
  throw validationFailed([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
}

