/**
 * `crm endpoints migrate`: the one-time move of a stage deployed before the endpoints table. Its
 * webhook endpoints (and their bound, `SLOTS#ENDPOINTS`) sit in the organizations table, where lead
 * intake can read their signing secrets and where delivery and the fan-out no longer look. Each is
 * copied to the endpoints table (unless a copy is already there: that one is newer) and then deleted
 * from the organizations table. Safe to run again; it ends by checking none is left
 * (docs/operations.md "Upgrading a stage deployed before the endpoints table").
 */
import type { Command } from 'commander';
import { DeleteItemCommand, PutItemCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { keys } from '../../../functions/core/platform/model.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { CliError, printResult } from '../output.js';
import { act } from '../run.js';

type Item = Record<string, AttributeValue>;

/** Every endpoint-side item still in the organizations table, page by page. */
async function* oldEndpointItems(deps: Deps): AsyncGenerator<Item[]> {
  let start: Item | undefined;
  do {
    const page = await deps.dynamodb.send(new ScanCommand({
      TableName: deps.tables.organizations, ConsistentRead: true, ExclusiveStartKey: start,
      FilterExpression: 'begins_with(sk, :endpoint) OR sk = :slots',
      ExpressionAttributeValues: { ':endpoint': { S: keys.endpointPrefix }, ':slots': { S: keys.endpointSlots('').sk } },
    }));
    yield page.Items ?? [];
    start = page.LastEvaluatedKey;
  } while (start);
}

/** Copies then deletes each old item; returns how many were moved and how many already had a copy. */
export async function migrateEndpoints(deps: Deps, onProgress: (done: number) => void = () => undefined): Promise<{ moved: number; alreadyThere: number; left: number }> {
  let moved = 0;
  let alreadyThere = 0;
  for await (const items of oldEndpointItems(deps)) {
    for (const item of items) {
      const key = { pk: item.pk, sk: item.sk };
      try {
        await deps.dynamodb.send(new PutItemCommand({ TableName: deps.tables.endpoints, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
        moved++;
      } catch (error) {
        if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
        alreadyThere++; // a copy written by the settings API since the deploy (or an earlier run) wins
      }
      await deps.dynamodb.send(new DeleteItemCommand({ TableName: deps.tables.organizations, Key: key }));
      onProgress(moved + alreadyThere);
    }
  }
  let left = 0;
  for await (const items of oldEndpointItems(deps)) left += items.length;
  return { moved, alreadyThere, left };
}

export function register(program: Command): void {
  const group = program.command('endpoints').description('webhook endpoints storage (upgrades)');
  group
    .command('migrate')
    .description('move endpoints (and their signing secrets) from the organizations table to the endpoints table; run right after upgrading a stage deployed before it')
    .action(act<Record<string, never>>(async ({ target, json }) => {
      const result = await migrateEndpoints(target.deps, (done) => {
        if (!json) process.stderr.write(`\r  ${done} item(s) moved`);
      });
      if (!json) process.stderr.write('\n');
      if (result.left > 0) throw new CliError(`${result.left} endpoint item(s) are still in the organizations table (written while this ran?): run \`crm endpoints migrate\` again.`);
      printResult({ json }, result, () => console.log(`Moved ${result.moved} item(s) to the endpoints table (${result.alreadyThere} already there); none left in the organizations table.`));
    }));
}
