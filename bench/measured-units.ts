/**
 * The units the benchmarks measure, kept in bench/measured-units.json for `npm run cost`
 * (scripts/cost.ts, docs/capacity.md "Cost"): each bench replaces its own section after a run.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export const measuredUnitsFile = new URL('./measured-units.json', import.meta.url);

export interface MeasuredUnits {
  delivery: {
    writeUnits: { value: number; byTable: Record<string, number>; byIndex?: Record<string, number> };
    readUnits: { value: number };
    sqsRequests: { value: number };
    measuredAt: string;
    by: string;
  };
  lead: { writeUnits: { value: number; prepaid: number; postpaid: number }; measuredAt: string; by: string };
}

export function readMeasuredUnits(file: URL | string = measuredUnitsFile): MeasuredUnits {
  return JSON.parse(readFileSync(file, 'utf8')) as MeasuredUnits;
}

/** Replaces one section with a run's figures, dated today. */
export function recordMeasuredUnits<K extends 'delivery' | 'lead'>(section: K, figures: Omit<MeasuredUnits[K], 'measuredAt'>): void {
  const all = readMeasuredUnits() as unknown as Record<string, unknown>;
  all[section] = { ...figures, measuredAt: new Date().toISOString().slice(0, 10) };
  writeFileSync(measuredUnitsFile, JSON.stringify(all, null, 2) + '\n');
  console.log(`  recorded in bench/measured-units.json (${section}); npm run docs:cost updates docs/capacity.md`);
}
