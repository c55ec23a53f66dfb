/**
 * DynamoDB Local has no bind option: where the machine cannot give it a private network namespace it
 * would listen on every interface. The local stack then refuses to start unless the user accepts the
 * exposure explicitly (`--expose-dynamodb`, CRM_ALLOW_EXPOSED_DYNAMODB=1). The machine running the
 * tests can isolate it, so the fallback is forced with `isolate: false`.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dynamoDbExposure, exposeDynamoDbEnvVar, startDynamoDbLocal } from '../../../lib/local/emulators.js';

const cannot = { reason: 'unshare -rn failed: Operation not permitted' };

describe('whether DynamoDB Local may start without isolation', () => {
  const saved = process.env[exposeDynamoDbEnvVar];
  afterEach(() => {
    if (saved === undefined) delete process.env[exposeDynamoDbEnvVar];
    else process.env[exposeDynamoDbEnvVar] = saved;
  });

  it('runs isolated whenever the machine can, whatever the opt-in says', () => {
    expect(dynamoDbExposure({ flags: ['-rn'] }, false)).toEqual({ run: 'isolated', flags: ['-rn'] });
    expect(dynamoDbExposure({ flags: ['-n'] }, true)).toEqual({ run: 'isolated', flags: ['-n'] });
  });

  it('refuses without an explicit opt-in, saying why and how', () => {
    const decision = dynamoDbExposure(cannot, false);
    expect(decision).toEqual({ refuse: expect.any(String) });
    const message = (decision as { refuse: string }).refuse;
    expect(message).toContain('Operation not permitted'); // why isolation failed
    expect(message).toMatch(/every network interface.*read every table/); // what it would mean
    expect(message).toContain('--expose-dynamodb');
    expect(message).toContain(`${exposeDynamoDbEnvVar}=1`);
    expect(message).toContain('unshare');
  });

  it('starts exposed with a warning once the user opted in', () => {
    expect(dynamoDbExposure(cannot, true)).toEqual({ run: 'exposed', warning: expect.stringMatching(/^warning: .*every network interface.*--expose-dynamodb/) });
  });

  it('does not start DynamoDB Local on every interface without the opt-in (nothing is created)', async () => {
    delete process.env[exposeDynamoDbEnvVar];
    const dbPath = path.join(mkdtempSync(path.join(tmpdir(), 'crm-exposure-')), 'dynamodb');
    const warnings: string[] = [];
    await expect(startDynamoDbLocal({ dbPath, isolate: false, warn: (l) => warnings.push(l) })).rejects.toThrow(/Refusing to start it that way.*--expose-dynamodb/s);
    expect(existsSync(dbPath)).toBe(false);
    expect(warnings).toEqual([]);
  });
});
