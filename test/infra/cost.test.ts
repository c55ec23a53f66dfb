/**
 * docs/capacity.md's cost section is `npm run cost`'s report of prod at the planned load, as the
 * code, the prices and the measured units are now (`npm run docs:cost` rewrites it), and that
 * month stays within the target, backups included; a year of durable data stays under its stated ceiling.
 */
import { readFileSync } from 'node:fs';
import { describe, it, expect } from '@jest/globals';
import { capacityDoc, costReport, steadyStateMonths, targetMonthly, withReport } from '../../scripts/cost.js';

describe('the cost report', () => {
  const report = costReport('prod');

  it('is what docs/capacity.md shows (run `npm run docs:cost` after a bench, price or template change)', () => {
    const doc = readFileSync(capacityDoc, 'utf8');
    expect(doc).toBe(withReport(doc, report));
  });

  it(`keeps prod at the planned load within $${targetMonthly} a month, backups included`, () => {
    const total = Number(/\| \*\*total\*\* \|.*\*\*\$([\d,]+)\*\* \|$/m.exec(report)?.[1].replace(/,/g, ''));
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(targetMonthly);
    expect(report).toMatch(/AWS Backup \| Weekly: \d+ points of organizations, endpoints, clients, workOrders \|/);
  });

  it(`keeps prod with ${steadyStateMonths} months of durable data within $${targetMonthly} a month too: monthly points cold, copies kept 4 months`, () => {
    const steady = new RegExp(`holding ${steadyStateMonths} months of leads .*?: \\$([\\d,]+) a month, (within|above) the (?:\\$8,000 )?target\\. The lines that grew: ([^;]+);`).exec(report);
    expect(steady).not.toBeNull();
    const total = Number(steady![1].replace(/,/g, ''));
    expect(total).toBeLessThanOrEqual(targetMonthly);
    expect(report).toMatch(/AWS Backup \| Monthly: 12 points \(1 warm, 11 cold\) of/);
    expect(report).toMatch(/AWS Backup \| Monthly: 4 copies \(1 warm, 3 cold\) in the second region/);
  });
});
