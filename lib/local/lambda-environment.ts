/**
 * The environment a function of the local stack runs with: what Lambda would give it (region,
 * credentials, the SDK's endpoint variables pointed at the emulators) plus what the topology binds
 * (table names, queue URLs, the settings parameter), as on AWS.
 */
import { tables, queues, secrets, type TableName, type QueueName, type SecretName } from '../topology.js';
import { settingsParameterEnvVar } from '../../functions/core/platform/bindings.js';
import { localStackMarkerEnvVar } from '../../functions/core/platform/config.js';
import { emulatorEnvironment } from './emulators.js';

/** A variable set to `undefined` is removed. */
export type Environment = Record<string, string | undefined>;

export function lambdaEnvironment(input: {
  region: string;
  endpoints: { dynamodb: string; sqs: string; ssm: string };
  tables: Record<TableName, string>;
  queues: Record<QueueName, string>;
  settingsParameter: string;
  /** The Secrets Manager stand-in and the secrets' names in it (as the stack binds each secret's name). */
  secretsManager?: { endpoint: string; names: Record<SecretName, string> };
}): Environment {
  return {
    ...emulatorEnvironment(input.region, input.endpoints),
    ...Object.fromEntries(Object.entries(tables).map(([name, spec]) => [spec.envVar, input.tables[name as TableName]])),
    ...Object.fromEntries(Object.entries(queues).map(([name, spec]) => [spec.envVar, input.queues[name as QueueName]])),
    [settingsParameterEnvVar]: input.settingsParameter,
    ...(input.secretsManager ? {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: input.secretsManager.endpoint,
      ...Object.fromEntries(Object.entries(secrets).map(([name, spec]) => [spec.envVar, input.secretsManager!.names[name as SecretName]])),
    } : {}),
    [localStackMarkerEnvVar]: '1',
    POWERTOOLS_METRICS_DISABLED: 'true',
    CRM_SETTINGS: undefined, // an input of the SSM stand-in only: the handlers must read SSM
  };
}

/**
 * The one place the local stack writes process.env. The handlers run in this process and read
 * their bindings from process.env exactly as on Lambda (functions/core/platform/deps.ts
 * lambdaDeps, settings.ts), so the variables have to be the process's own; a handler never gets
 * its environment any other way.
 */
export function applyToProcessEnvironment(environment: Environment): void {
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}
