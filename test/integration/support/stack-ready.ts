/**
 * Setup of every integration file: waits for the suite's local stack, which global-setup.ts starts
 * without waiting, under a deadline of its own (a loaded machine may take a while to start it),
 * so no test or hook of the file spends its own time-out on it.
 */
import { beforeAll } from '@jest/globals';
import { testStack } from './stack.js';

beforeAll(async () => {
  await testStack();
}, 150_000);
