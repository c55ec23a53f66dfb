/**
 * The API's invoke permissions survive a deploy onto a stack of the previous version: one API
 * Gateway permission per function (its stage, any method and path, SourceAccount), so the update
 * that deletes the previous version's permission per method adds one statement, not one per method,
 * and no function's resource policy passes Lambda's 20 KB while both are there (docs/deploy.md
 * "Upgrading a deployed stack").
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { routes } from '../../functions/front-door/routes.js';
import { stages } from '../../lib/stages.js';
import { synthStage, type Synthesized } from './support/synth.js';

/** Lambda's limit on a function's resource policy (PolicyLengthExceededException beyond it). */
const policyLimitBytes = 20 * 1024;
/** The longest values CloudFormation resolves to: a generated function name (64), a statement id (100), an API id (10). */
const longest = { functionName: 'f'.repeat(64), statementId: 's'.repeat(100), apiId: 'a'.repeat(10) };

type Resources = Synthesized['template']['Resources'];
const account = stages.prod.account!;
const region = stages.prod.region!;
const functionArn = `arn:aws:lambda:${region}:${account}:function:${longest.functionName}`;

/** A template value with its references replaced by the longest value each can take. */
function resolve(value: unknown, resources: Resources): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if (v.Ref === 'AWS::Partition') return 'aws';
  if (v.Ref === 'AWS::AccountId') return account;
  if (typeof v.Ref === 'string' && resources[v.Ref]?.Type === 'AWS::ApiGateway::RestApi') return longest.apiId;
  if (Array.isArray(v['Fn::GetAtt'])) return functionArn;
  if (Array.isArray(v['Fn::Join'])) {
    const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolve(p, resources)).join(separator);
  }
  throw new Error(`cannot resolve ${JSON.stringify(value)}`);
}

/** A statement as Lambda keeps it in the function's policy (GetPolicy). */
const statement = (sourceArn: string, sourceAccount?: string) => JSON.stringify({
  Sid: longest.statementId, Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' }, Action: 'lambda:InvokeFunction', Resource: functionArn,
  Condition: { ...(sourceAccount ? { StringEquals: { 'AWS:SourceAccount': sourceAccount } } : {}), ArnLike: { 'AWS:SourceArn': sourceArn } },
});
const policyBytes = (statements: string[]) => Buffer.byteLength(JSON.stringify({ Version: '2012-10-17', Id: 'default' }) + statements.join(','));

/**
 * The previous version's statements of a function: one per method it serves (LambdaIntegration's
 * method-scoped permissions, no test-invoke ones), a path parameter written `*`, no SourceAccount.
 */
const previousStatements = (fn: string) => routes.filter((r) => r.function === fn).map((r) =>
  statement(`arn:aws:execute-api:${region}:${account}:${longest.apiId}/prod/${r.method}${r.path.replace(/\{[^}]+\}/g, '*')}`));

let prod: Synthesized;
beforeAll(() => { prod = synthStage('prod'); });
afterAll(() => prod.remove());

const apiPermissions = (resources: Resources) => Object.values(resources)
  .filter((r) => r.Type === 'AWS::Lambda::Permission' && r.Properties?.Principal === 'apigateway.amazonaws.com')
  .map((r) => r.Properties!);
const functionIdOf = (permission: Record<string, unknown>) => (permission.FunctionName as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];

describe('API Gateway permissions', () => {
  it('are one per routed function: its stage, any method and path, this account', () => {
    const permissions = apiPermissions(prod.template.Resources);
    const byFunction = new Map<string, number>();
    for (const p of permissions) byFunction.set(functionIdOf(p), (byFunction.get(functionIdOf(p)) ?? 0) + 1);
    expect(byFunction.size).toBe(new Set(routes.map((r) => r.function)).size);
    for (const count of byFunction.values()) expect(count).toBe(1);
    for (const p of permissions) {
      expect(p.SourceAccount).toBe(account);
      expect(resolve(p.SourceArn, prod.template.Resources)).toBe(`arn:aws:execute-api:${region}:${account}:${longest.apiId}/prod/*/*`);
    }
  });

  it('keep every function\'s policy under 20 KB while the previous version\'s and the new statements are both there', () => {
    const resources = prod.template.Resources;
    for (const fn of new Set(routes.map((r) => r.function))) {
      const id = Object.keys(resources).find((k) => resources[k].Type === 'AWS::Lambda::Function' && k.startsWith(`${fn}Function`))!;
      const added = apiPermissions(resources).filter((p) => functionIdOf(p) === id).map((p) => statement(resolve(p.SourceArn, resources), String(p.SourceAccount)));
      const during = policyBytes([...previousStatements(fn), ...added]);
      expect(during).toBeLessThan(policyLimitBytes);
    }
    // The check can fail: replacing every method's permission (the previous version's plus a copy with SourceAccount) passes the limit.
    const replacedPerMethod = [...previousStatements('settingsApi'), ...previousStatements('settingsApi').map((s) => s.replace('"Condition":{', `"Condition":{"StringEquals":{"AWS:SourceAccount":"${account}"},`))];
    expect(policyBytes(replacedPerMethod)).toBeGreaterThan(policyLimitBytes);
  });
});
