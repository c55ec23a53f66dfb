/**
 * The cost model's custom-metric count (docs/cost-assumptions.json `customMetrics`) is the number of
 * metrics the functions emit: each name an `addMetric` gives (a literal, either side of a ternary, or
 * a helper's literal argument), with the service dimension alone, and one per value of an added
 * dimension (DeliveryTransitionsRefused, per delivery transition). Read from functions/**, so a new
 * metric that the assumption does not count fails here.
 */
import { describe, it, expect } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const sources = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
  const file = path.join(dir, entry.name);
  if (entry.isDirectory()) return sources(file);
  return file.endsWith('.ts') ? [readFileSync(file, 'utf8')] : [];
});

/** Metric names (and, for a metric with an added dimension, that dimension) the functions' code emits. */
function emitted(): Map<string, string | undefined> {
  const names = new Map<string, string | undefined>();
  for (const text of sources('functions')) {
    for (const [, argument] of text.matchAll(/addMetric\(([^,]+),\s*MetricUnit/g)) {
      const literals = [...argument!.matchAll(/'([A-Z][A-Za-z]+)'/g)].map(([, name]) => name!);
      // A name passed in: the literals the enclosing helper is called with (its last argument).
      if (literals.length === 0) {
        const helper = new RegExp(`function (\\w+)[^(]*\\([^)]*\\b${argument!.trim()}: string\\)`).exec(text)?.[1];
        for (const [, name] of text.matchAll(new RegExp(`\\b${helper}\\([^;]*?,\\s*'([A-Z][A-Za-z]+)'\\)`, 'g'))) literals.push(name!);
      }
      expect(literals.length).toBeGreaterThan(0);
      const dimension = /addDimension\('(\w+)'[^;]*;\s*\w+\.addMetric\($/.exec(text.slice(0, text.indexOf(`addMetric(${argument}`) + 'addMetric('.length))?.[1];
      for (const name of literals) names.set(name, dimension);
    }
  }
  return names;
}

describe('the cost model\'s custom metrics', () => {
  it('count every metric the functions emit, once per dimension value', () => {
    const names = emitted();
    expect(names.get('DeliveryTransitionsRefused')).toBe('transition');
    expect(names.get('DeliveriesMovedToSlowLane')).toBeUndefined();
    expect(names.has('MergeTargetGone') && names.has('MergeTargetFull')).toBe(true);
    const transitions = new Set([...readFileSync('functions/core/delivery/delivery-state.ts', 'utf8').matchAll(/\{ to: '([a-z-]+)'/g)].map(([, to]) => to)).size;
    const count = [...names.values()].reduce((sum, dimension) => sum + (dimension === 'transition' ? transitions : 1), 0);
    const assumptions = JSON.parse(readFileSync('docs/cost-assumptions.json', 'utf8')) as { customMetrics: { value: number } };
    expect(assumptions.customMetrics.value).toBe(count);
  });
});
