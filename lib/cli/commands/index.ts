import type { Command } from 'commander';
import { register as org } from './org.js';
import { register as keys } from './keys.js';
import { register as logs } from './logs.js';
import { register as webhooks } from './webhooks.js';
import { register as deliveries } from './deliveries.js';
import { register as records } from './records.js';
import { register as events } from './events.js';
import { register as settings } from './settings.js';
import { register as tables } from './tables.js';
import { register as endpoints } from './endpoints.js';
import { register as notifications } from './notifications.js';

/** Each entry adds one noun (`org`, `keys`, `webhooks`, ...) and its verbs to the program. */
export const commandModules: ((program: Command) => void)[] = [org, keys, logs, webhooks, deliveries, records, events, settings, tables, endpoints, notifications];
