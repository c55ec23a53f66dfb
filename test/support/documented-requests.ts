/**
 * The settings routes that take a body or a query, read from the generated OpenAPI document
 * (functions/core/settings/openapi.ts): a new route with a schema is listed here without a test
 * changing. For each, the smallest request the document says is valid, built from its JSON Schema,
 * so a test can add one undocumented field and know that field is the only problem.
 */
import { openApiDocument } from '../../functions/core/settings/openapi.js';

export type JsonSchema = {
  type?: string; enum?: unknown[]; format?: string; properties?: Record<string, JsonSchema>; required?: string[];
  items?: JsonSchema; minItems?: number; maxItems?: number; minLength?: number; maxLength?: number; minimum?: number; maximum?: number; anyOf?: JsonSchema[];
};
interface Parameter { name: string; in: string; required?: boolean; schema: JsonSchema }
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
}

export interface DocumentedRequest {
  /** `METHOD /api/settings/...` as the routes name it. */
  route: string;
  method: string;
  path: string;
  operation: Operation;
  /** The body schema (JSON), when the route takes a body. */
  body?: JsonSchema;
  /** The documented query parameters, when the route takes a query. */
  query: Parameter[];
}

/** A value the schema accepts: its first enum value, a URL for a URI, an hour ago for a time, the least of a bound. */
export function exampleOf(schema: JsonSchema): unknown {
  if (schema.anyOf) return exampleOf(schema.anyOf[0]);
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((name) => [name, exampleOf(schema.properties![name])]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => exampleOf(schema.items!));
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    default:
      if (schema.format === 'uri') return 'https://hooks.example/documented';
      if (schema.format === 'date-time') return new Date(Date.now() - 3_600_000).toISOString();
      return 'x'.repeat(schema.minLength ?? 1);
  }
}

/** The query of the smallest valid request: its required parameters. */
export const exampleQuery = (query: Parameter[]) =>
  Object.fromEntries(query.filter((p) => p.required).map((p) => [p.name, String(exampleOf(p.schema))]));

export function documentedRequests(): DocumentedRequest[] {
  const paths = openApiDocument().paths as unknown as Record<string, Record<string, Operation>>;
  return Object.entries(paths).filter(([path]) => path.startsWith('/api/settings')).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      route: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      operation,
      body: operation.requestBody?.content['application/json']?.schema,
      query: (operation.parameters ?? []).filter((p) => p.in === 'query'),
    }))).filter((r) => r.body || r.query.length);
}

/** A field (or query parameter) no route documents. */
export const UNDOCUMENTED = 'undocumented_field';
