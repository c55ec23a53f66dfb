#!/usr/bin/env node
// `npx crm` entry: registers tsx so the TypeScript CLI runs without a build step.
import { register } from 'tsx/esm/api';

// The AWS SDK warns that it will need Node 22 from 2027; that is not the admin's concern here.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) =>
  String(warning?.name ?? rest[0]?.type ?? rest[0]).includes('NodeVersionSupportWarning') || String(warning).includes('NodeVersionSupportWarning')
    ? undefined
    : emitWarning.call(process, warning, ...rest);

register();
await import('./crm.ts');
