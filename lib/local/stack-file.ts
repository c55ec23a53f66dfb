/**
 * The local stack's file (`<dir>/stack.json`, docs/local-stack.md): what `npm start` writes, and the one
 * place that turns it into deps, for the CLI, the integration tests and the benches.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createDeps, type Deps } from '../../functions/core/platform/deps.js';
import { parseConfig, type Config } from '../../functions/core/platform/config.js';
import type { TableName, QueueName, SecretName } from '../topology.js';

/** What `npm start` writes to .local/stack.json, plus the physical names it created. */
export interface LocalStackInfo {
  apiUrl: string;
  dynamodbEndpoint: string;
  /** False when DynamoDB Local could not be put in a private network namespace (it then listens on every interface). */
  dynamodbIsolated?: boolean;
  sqsEndpoint: string;
  /** The SSM stand-in holding the settings parameter (the handlers read them there). */
  ssmEndpoint?: string;
  settingsParameter?: string;
  /** The Secrets Manager stand-in (lib/local/secrets-stand-in.ts) and the secrets' names in it. */
  secretsEndpoint?: string;
  secrets?: Partial<Record<SecretName, string>>;
  region: string;
  /** `settingsUrl`: a settings link for the demo organization, minted at start (valid 1 h). */
  demo?: { organizationId: string; apiKey: string; settingsUrl?: string };
  /** Where notices are sent (`smtpUrl`) and, with the local mail capture, where to read them (`inboxUrl`: a page, `/messages` as JSON). */
  mail?: { smtpUrl: string; inboxUrl?: string };
  tables: Record<TableName, string>;
  queues: Record<QueueName, string>;
  settings: unknown;
}

/** Where `npm start` writes it by default (the CLI's default target). */
export const defaultStackFile = (cwd = process.cwd()) => path.join(cwd, '.local', 'stack.json');

export function readStackFile(file: string): LocalStackInfo {
  return JSON.parse(readFileSync(file, 'utf8')) as LocalStackInfo;
}

/** Deps on the stack's emulators; `settings` defaults to those the stack started with. */
export function depsFromStackFile(info: LocalStackInfo, settings: Config = parseConfig(info.settings)): Deps {
  return createDeps({
    region: info.region,
    dynamodbEndpoint: info.dynamodbEndpoint,
    sqsEndpoint: info.sqsEndpoint,
    tables: info.tables,
    queues: info.queues,
    config: settings,
  });
}
