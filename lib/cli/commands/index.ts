import type { Command } from 'commander';

/** Each entry adds one noun (`org`, `keys`, `webhooks`, ...) and its verbs to the program. */
export const commandModules: ((program: Command) => void)[] = [];
