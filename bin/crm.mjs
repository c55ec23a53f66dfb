#!/usr/bin/env node
// `npx crm` entry: registers tsx so the TypeScript CLI runs without a build step.
import { register } from 'tsx/esm/api';

register();
await import('./crm.ts');
