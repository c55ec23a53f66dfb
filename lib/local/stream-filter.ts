/**
 * Lambda's event filtering, as the local pollers play it: a record reaches the function only if it
 * matches the event source's pattern (lib/topology.ts `filter`), the same pattern the CDK stack
 * renders as FilterCriteria. The forms the topology uses: per field, a list of exact strings or
 * `{ prefix }`; nested objects for nested fields; a field the record lacks does not match.
 */
import type { FilterPattern } from '../topology.js';

export function matchesFilter(pattern: FilterPattern, value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(pattern).every(([field, rule]) => {
    const v = (value as Record<string, unknown>)[field];
    if (!Array.isArray(rule)) return matchesFilter(rule as FilterPattern, v);
    return typeof v === 'string' && (rule as readonly (string | { prefix: string })[]).some((r) => (typeof r === 'string' ? v === r : v.startsWith(r.prefix)));
  });
}
