/**
 * `npm start` as a user runs it (bin/local.ts, persistent data in a folder): it writes stack.json and
 * serves the API; SIGTERM stops it with no process left behind; a restart keeps DynamoDB data, and
 * every command its banner prints (curl and `npx crm`) works as pasted, though its --dir and --port
 * are not the defaults.
 */
import { describe, it, expect } from '@jest/globals';
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PutCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { depsFromStackFile, readStackFile } from '../../../lib/local/stack-file.js';
import { eventually } from '../support/stack.js';
import { linkBin } from '../../../scripts/build-cli.mjs';

function start(dir: string, options: { banner?: boolean } = {}): ChildProcess {
  return spawn(process.execPath, ['--no-warnings', '--import', 'tsx', 'bin/local.ts', '--port', '0', '--dir', dir, ...(options.banner ? [] : ['--quiet'])], {
    stdio: ['ignore', options.banner ? 'pipe' : 'ignore', 'ignore'], env: { ...process.env, NODE_OPTIONS: '' },
  });
}

/** The CLI commands the start banner prints (each as a user would paste it). */
const bannerCommands = (banner: string) => [...new Set(banner.match(/(?:CRM_STACK_FILE=\S+ )?npx crm [^\n)]+?(?=\s{2,}|\)|\n|$)/g) ?? [])].map((c) => c.trim());
/** The curl commands it prints, with their continuation lines. */
function curlCommands(banner: string): string[] {
  const out: string[] = [];
  let open = false;
  for (const line of banner.split('\n').map((l) => l.trim())) {
    if (line.startsWith('curl ')) out.push(line);
    else if (open) out[out.length - 1] += `\n${line}`;
    else continue;
    open = line.endsWith('\\');
  }
  return out;
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

/** Java processes whose command line names this data folder. */
const javaFor = (dir: string) =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('DynamoDBLocal') && l.includes(dir));

describe('npm start', () => {
  it('serves the API, stops cleanly on SIGTERM and keeps its data across a restart', async () => {
    // A folder npm start creates itself (as it does .local), so its mode is the stack's doing.
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'crm-npm-start-')), 'data');
    const stackFile = path.join(dir, 'stack.json');
    const first = start(dir);
    try {
    await eventually(async () => existsSync(stackFile), { timeoutMs: 60_000, what: 'stack.json' });
    // Owner-only, whatever the umask: the demo key, the tables (signing secrets), the bridge's socket.
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
    expect({ dir: mode(dir), data: mode(path.join(dir, 'dynamodb')), socketDir: mode(path.join(dir, 'run')), stackFile: mode(stackFile) })
      .toEqual({ dir: '700', data: '700', socketDir: '700', stackFile: '600' });
    const info = readStackFile(stackFile);
    expect(info).toMatchObject({ apiUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), region: 'us-east-1' });
    expect((await fetch(`${info.apiUrl}/api/webhook/leads`)).status).toBe(401);

    const deps = depsFromStackFile(info);
    await deps.doc.send(new PutCommand({ TableName: info.tables.clients, Item: { pk: 'ORG#persist', sk: 'CLIENT#1', first_name: 'Kept' } }));
    } finally {
      expect(await stop(first)).toBe(0);
    }
    expect(existsSync(stackFile)).toBe(false);
    expect(javaFor(dir)).toEqual([]);

    // Started again with its banner: every CLI command it prints works when pasted, though its folder is not .local.
    const second = start(dir, { banner: true });
    let banner = '';
    second.stdout!.on('data', (chunk: Buffer) => (banner += chunk.toString()));
    try {
      await eventually(async () => existsSync(stackFile) && banner.includes('Ctrl-C to stop'), { timeoutMs: 60_000, what: 'stack.json and the banner again' });
      const commands = bannerCommands(banner);
      expect(commands.length).toBeGreaterThanOrEqual(3);
      const curls = curlCommands(banner);
      expect(curls).toHaveLength(2); // check the key, send a lead
      expect(curls.every((c) => c.includes('http://127.0.0.1:'))).toBe(true); // loopback only
      linkBin(); // what `npm ci` (the prepare script) made: node_modules/.bin/crm, which npx runs
      // As pasted into a shell in the project folder (npx and all), with no CRM_STACK_FILE of the
      // test's own; curl told to fail on an HTTP error, so that success means the API said yes.
      const { CRM_STACK_FILE: _ignored, ...env } = process.env;
      for (const command of [...commands, ...curls.map((c) => `${c} --fail-with-body`)]) {
        const run = spawnSync('bash', ['-c', command], { encoding: 'utf8', env: { ...env, NODE_OPTIONS: '' }, timeout: 60_000 });
        expect({ command, code: run.status, stderr: run.stderr }).toEqual({ command, code: 0, stderr: expect.any(String) });
      }
      const again = readStackFile(stackFile);
      const deps2 = depsFromStackFile(again);
      const { Item } = await deps2.doc.send(new GetCommand({ TableName: again.tables.clients, Key: { pk: 'ORG#persist', sk: 'CLIENT#1' } }));
      expect(Item?.first_name).toBe('Kept');
    } finally {
      await stop(second);
    }
    expect(javaFor(dir)).toEqual([]);
  }, 120_000);
});
