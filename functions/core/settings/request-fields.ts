/**
 * What every operation of the settings API shares (handle-settings-request.ts runs them): the
 * request context, and reading a body or a query the same way everywhere: a misspelt field, a bad
 * time, a foreign cursor is a 422 with the field named, never ignored.
 */
import type { Deps } from '../platform/deps.js';
import { validationFailed, type FieldError } from '../platform/errors.js';
import { readJsonBody, type HttpRequest } from '../platform/http-request.js';
import type { Organization } from '../platform/model.js';
import type { AuditAction } from './audit-log.js';
import type { Session } from './session-token.js';
import type { EndpointOptions } from '../delivery/endpoints.js';
import type { HeaderChanges } from '../delivery/endpoint-fields.js';

const MAX_BODY_BYTES = 16 * 1024;
const MAX_GRACE_HOURS = 168;

export interface Context {
  deps: Deps;
  request: HttpRequest;
  session: Session;
  organization: Organization;
  params: Record<string, string>;
  query: Record<string, string>;
  /** Records a change in the audit log as the session's user. */
  audit(action: AuditAction, targetId?: string, detail?: Record<string, unknown>): Promise<unknown>;
}
export type Answer = { status: number; body: unknown };
export type Operation = (c: Context) => Promise<Answer>;

export function objectBody(request: HttpRequest, optional = false): Record<string, unknown> {
  const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : request.body ?? '';
  if (optional && raw.trim() === '') return {};
  const body = readJsonBody(request, MAX_BODY_BYTES);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationFailed([{ field: '(body)', message: 'must be a JSON object' }]);
  return body as Record<string, unknown>;
}

/** An endpoint body's `headers` and `rate_limit_per_second`, as the domain takes them (it validates them: delivery/endpoint-fields.ts). */
export const endpointOptionsOf = (body: Record<string, unknown>): EndpointOptions => ({
  ...(body.headers !== undefined ? { headers: body.headers as HeaderChanges } : {}),
  ...(body.rate_limit_per_second !== undefined ? { rateLimitPerSecond: body.rate_limit_per_second as number | null } : {}),
});

export function graceOf(body: Record<string, unknown>): number | undefined {
  const grace = body.grace_hours;
  const errors = unknownFields(body, ['grace_hours']);
  if (grace !== undefined && (typeof grace !== 'number' || !Number.isFinite(grace) || grace < 0 || grace > MAX_GRACE_HOURS)) errors.push({ field: 'grace_hours', message: `must be 0 to ${MAX_GRACE_HOURS} hours` });
  if (errors.length) throw validationFailed(errors);
  return grace as number | undefined;
}

/**
 * Fields a body may not carry: a misspelt one is a 422, never ignored (`{"grace": 0}` meant to cut
 * a leaked key off now must not leave it working for the default grace).
 */
export function unknownFields(body: Record<string, unknown>, known: string[]): FieldError[] {
  return Object.keys(body).filter((k) => !known.includes(k)).map((field) => ({ field, message: 'is not a field of this request' }));
}

export function limitOf(value: string | undefined): number {
  if (value === undefined || value === '') return 50;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw validationFailed([{ field: 'limit', message: 'must be 1 to 200' }]);
  return n;
}

export function timeOf(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw validationFailed([{ field, message: 'must be an ISO-8601 time' }]);
  return new Date(t).toISOString();
}

/** The longest cursor any of the settings API's lists hands out (base64url): a longer one is refused before it is parsed. */
export const MAX_CURSOR_CHARS = 200;
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

