/**
 * `npm run cost`: what a stage costs a month at a load, line by line (scripts/cost-model.ts).
 * The template is synthesized here, in-process and without bundling (as test/infra does: the
 * bundles change no price, and cdk.out may be stale or of another stage), so the report always
 * describes the code as it is. `npm run docs:cost` writes the report into docs/capacity.md
 * between its markers; test/infra/cost.test.ts checks that the page is current.
 *
 * Flags: --stage prod, --leads-per-second 200, --hours 8, --days 22, --deliveries-per-lead 5,
 * --durable-months 1, --prices docs/prices-us-east-1.json, --write-doc.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../lib/stacks/app.js';
import { readMeasuredUnits } from '../bench/measured-units.js';
import { estimateCost, plannedLoad, renderReport, type Assumptions, type Load, type Prices, type Template } from './cost-model.js';

const root = new URL('../', import.meta.url);
export const targetMonthly = 8000;
/**
 * The steady state the report also shows: a year of leads in the durable tables (monthly points are
 * kept a year); test/infra/cost.test.ts holds it to the same target (docs/capacity.md "Cost").
 */
export const steadyStateMonths = 12;
export const capacityDoc = new URL('docs/capacity.md', root);
const markers = { begin: '<!-- cost report: npm run docs:cost writes what follows -->', end: '<!-- end of the cost report -->' };

/**
 * The stage's template as `cdk synth -c stage=<stage>` writes it, minus the bundles and the CDK's
 * built-in CloudFormation validation (it changes no template, and its engine costs seconds to load).
 */
export function synthesizedTemplate(stage: string): Template {
  const outdir = mkdtempSync(path.join(tmpdir(), 'crm-cost-'));
  try {
    const { app, stack } = buildApp({ outdir, builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], stage } });
    return app.synth().getStackByName(stack.stackName).template as Template;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

const readJson = <T>(file: string | URL) => JSON.parse(readFileSync(file, 'utf8')) as T;

/** The report of a stage at a load, from the committed prices, measured units and assumptions. */
export function costReport(stage = 'prod', load: Load = plannedLoad, pricesFile: string | URL = new URL('docs/prices-us-east-1.json', root)): string {
  const prices = readJson<Prices>(pricesFile);
  const measured = readMeasuredUnits();
  const assumed = readJson<Assumptions>(new URL('docs/cost-assumptions.json', root));
  const template = synthesizedTemplate(stage);
  const report = estimateCost(template, prices, measured, assumed, load);
  const nextMonth = estimateCost(template, prices, measured, assumed, { ...load, durableMonths: load.durableMonths + 1 });
  const steadyState = load.durableMonths < steadyStateMonths ? estimateCost(template, prices, measured, assumed, { ...load, durableMonths: steadyStateMonths }) : undefined;
  return renderReport(report, { prices, measured, stage, target: targetMonthly, nextMonth, steadyState });
}

/** docs/capacity.md with its cost section replaced by `report`. */
export function withReport(doc: string, report: string): string {
  const begin = doc.indexOf(markers.begin);
  const end = doc.indexOf(markers.end);
  if (begin < 0 || end < begin) throw new Error(`docs/capacity.md lacks the markers ${markers.begin} … ${markers.end}`);
  return `${doc.slice(0, begin + markers.begin.length)}\n\n${report}\n${doc.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      stage: { type: 'string', default: 'prod' },
      'leads-per-second': { type: 'string', default: String(plannedLoad.leadsPerSecond) },
      hours: { type: 'string', default: String(plannedLoad.hoursPerDay) },
      days: { type: 'string', default: String(plannedLoad.daysPerMonth) },
      'deliveries-per-lead': { type: 'string', default: String(plannedLoad.deliveriesPerLead) },
      'durable-months': { type: 'string', default: String(plannedLoad.durableMonths) },
      prices: { type: 'string' },
      'write-doc': { type: 'boolean', default: false },
    },
  });
  const load: Load = {
    leadsPerSecond: Number(values['leads-per-second']), hoursPerDay: Number(values.hours), daysPerMonth: Number(values.days),
    deliveriesPerLead: Number(values['deliveries-per-lead']), durableMonths: Number(values['durable-months']),
  };
  for (const [name, value] of Object.entries(load)) {
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a number ≥ 0`);
  }
  const report = costReport(values.stage, load, values.prices ?? undefined);
  if (values['write-doc']) {
    writeFileSync(capacityDoc, withReport(readFileSync(capacityDoc, 'utf8'), report));
    console.log('wrote the cost report into docs/capacity.md');
  } else {
    process.stdout.write(report);
  }
}
