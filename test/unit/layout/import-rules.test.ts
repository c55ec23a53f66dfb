/**
 * The import rules (.dependency-cruiser.cjs, docs/architecture.md#import-rules) catch what they say they catch: each
 * planted import below, in a scratch tree shaped like this repository, must be reported, and the
 * allowed ones must not.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve('.');
let dir: string;

/** Writes `file` (repo-relative) importing each of `imports` (specifiers relative to it). */
function plant(file: string, imports: string[] = []): void {
  const full = path.join(dir, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, imports.map((i) => `import '${i}';`).join('\n') + '\nexport {};\n');
}

function violations(): string[] {
  try {
    execFileSync(path.join(root, 'node_modules/.bin/depcruise'), ['functions', 'lib', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], { cwd: dir, stdio: 'pipe' });
    return [];
  } catch (error) {
    const out = String((error as { stdout?: Buffer }).stdout ?? '');
    return [...out.matchAll(/error (\S+): (\S+) → (\S+)/g)].map(([, rule, from, to]) => `${rule}: ${from} → ${to}`);
  }
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'import-rules-'));
  copyFileSync(path.join(root, '.dependency-cruiser.cjs'), path.join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }));
  plant('lib/topology.ts', ['../functions/core/platform/bindings.ts', '../functions/core/platform/errors.ts']);
  plant('functions/core/platform/bindings.ts');
  plant('functions/core/platform/errors.ts');
  plant('functions/core/platform/deps.ts', ['../delivery/queue.ts']);
  plant('functions/core/tenancy/keys.ts', ['../platform/errors.ts', '../platform/bindings.ts', '../../../lib/topology.ts', '../../front-door/waf.ts']);
  plant('functions/front-door/waf.ts', ['../core/platform/bindings.ts', '../adapters/http-adapter.ts']);
  plant('functions/adapters/http-adapter.ts', ['../front-door/waf.ts', '../../lib/stages.ts']);
  plant('lib/stages.ts');
  plant('functions/core/delivery/queue.ts', ['../events/fanout.ts']);
  plant('functions/core/events/fanout.ts', ['../delivery/signing.ts', '../tenancy/keys.ts']);
  plant('functions/core/delivery/signing.ts');
  plant('functions/core/intake/lead.ts', ['../../../lib/cli/run.ts', '../../../scripts/tool.ts']);
  plant('scripts/tool.ts');
  plant('functions/core/loose.ts', ['./platform/errors.ts']);
  plant('lib/cli/run.ts');
  plant('lib/cli/program.ts');
  plant('lib/cli/commands/keys.ts', ['../program.ts', '../run.ts']);
  plant('lib/local/stack.ts', ['../cli/run.ts', '../../functions/core/events/fanout.ts']);
  // The DynamoDB SDK, as a package the scratch tree resolves.
  for (const pkg of ['lib-dynamodb', 'client-dynamodb']) {
    plant(`node_modules/@aws-sdk/${pkg}/index.js`);
    writeFileSync(path.join(dir, `node_modules/@aws-sdk/${pkg}/package.json`), JSON.stringify({ name: `@aws-sdk/${pkg}`, main: 'index.js' }));
  }
  plant('functions/core/intake/match.ts', ['@aws-sdk/lib-dynamodb', './clients-store.ts']);
  // platform/dynamo-store.ts (clients, paginated reads, errors) is the stores' own: a store may read through it, nothing else.
  plant('functions/core/platform/dynamo-store.ts', ['@aws-sdk/lib-dynamodb']);
  plant('functions/core/intake/clients-store.ts', ['@aws-sdk/lib-dynamodb', '@aws-sdk/client-dynamodb', '../platform/dynamo-store.ts']);
  plant('functions/core/crm/records.ts', ['@aws-sdk/client-dynamodb', '../platform/dynamo-store.ts']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the import rules', () => {
  it('report each planted violation and nothing that is allowed', () => {
    expect(violations().sort()).toEqual([
      'commands-not-program: lib/cli/commands/keys.ts → lib/cli/program.ts',
      'delivery-imports: functions/core/delivery/queue.ts → functions/core/events/fanout.ts',
      'domain-knows-no-adapter: functions/core/intake/lead.ts → lib/cli/run.ts',
      'functions-know-no-lib: functions/core/intake/lead.ts → lib/cli/run.ts',
      'domain-knows-no-adapter: functions/core/tenancy/keys.ts → lib/topology.ts',
      'functions-know-no-lib: functions/core/tenancy/keys.ts → lib/topology.ts',
      'domain-knows-no-adapter: functions/core/tenancy/keys.ts → functions/front-door/waf.ts',
      'front-door-is-data: functions/front-door/waf.ts → functions/adapters/http-adapter.ts',
      'functions-know-no-lib: functions/adapters/http-adapter.ts → lib/stages.ts',
      'topology-is-data: lib/topology.ts → functions/core/platform/errors.ts',
      'domain-knows-no-adapter: functions/core/intake/lead.ts → scripts/tool.ts',
      'local-knows-no-cli: lib/local/stack.ts → lib/cli/run.ts',
      'no-loose-domain-files: functions/core/loose.ts → functions/core/platform/errors.ts',
      'platform-imports: functions/core/platform/deps.ts → functions/core/delivery/queue.ts',
      'dynamodb-sdk-only-in-stores: functions/core/intake/match.ts → node_modules/@aws-sdk/lib-dynamodb/index.js',
      'dynamodb-sdk-only-in-stores: functions/core/crm/records.ts → node_modules/@aws-sdk/client-dynamodb/index.js',
      'dynamodb-sdk-only-in-stores: functions/core/crm/records.ts → functions/core/platform/dynamo-store.ts',
    ].sort());
  }, 30_000);
});
