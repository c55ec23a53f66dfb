/**
 * Turns a synthesized template's intrinsic functions into the concrete values CloudFormation would
 * give them in one account and region, for the resource types the roles' policies name: enough for
 * an offline IAM simulator to match real request ARNs. A resource's physical name is its logical id
 * unless the template names it (a log group's LogGroupName, a parameter's Name).
 */
export interface Where { partition: string; region: string; account: string }
type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

export function arnResolver(resources: Resources, { partition, region, account }: Where) {
  const nameOf = (id: string, property: string) => (resources[id]?.Properties?.[property] as string | undefined) ?? id;
  const ref = (id: string): string => {
    const pseudo: Record<string, string> = { 'AWS::Partition': partition, 'AWS::Region': region, 'AWS::AccountId': account, 'AWS::URLSuffix': 'amazonaws.com' };
    if (pseudo[id]) return pseudo[id];
    const type = resources[id]?.Type;
    if (!type) throw new Error(`Ref to unknown ${id}`);
    // Ref of a secret is its ARN (with Secrets Manager's random 6-character suffix), of a parameter its name.
    if (type === 'AWS::SecretsManager::Secret') return `arn:${partition}:secretsmanager:${region}:${account}:secret:${id}-AbCdEf`;
    if (type === 'AWS::SSM::Parameter') return nameOf(id, 'Name');
    return id;
  };
  const getAtt = (id: string, attribute: string): string => {
    const type = resources[id]?.Type;
    const arn = (service: string, resource: string) => `arn:${partition}:${service}:${region}:${account}:${resource}`;
    if (type === 'AWS::DynamoDB::Table' && attribute === 'Arn') return arn('dynamodb', `table/${id}`);
    if (type === 'AWS::DynamoDB::Table' && attribute === 'StreamArn') return arn('dynamodb', `table/${id}/stream/2026-01-01T00:00:00.000`);
    if (type === 'AWS::SQS::Queue' && attribute === 'Arn') return arn('sqs', id);
    // CloudFormation's log group ARN ends in `:*` (its streams).
    if (type === 'AWS::Logs::LogGroup' && attribute === 'Arn') return arn('logs', `log-group:${resolve(nameOf(id, 'LogGroupName'))}:*`);
    if (type === 'AWS::IAM::Role' && attribute === 'Arn') return `arn:${partition}:iam::${account}:role/${id}`;
    throw new Error(`no resolution for Fn::GetAtt ${id}.${attribute} (${type})`);
  };
  const resolve = (value: unknown): string => {
    if (typeof value === 'string') return value;
    const node = value as Record<string, unknown>;
    if ('Ref' in node) return ref(node.Ref as string);
    if ('Fn::GetAtt' in node) return getAtt(...(node['Fn::GetAtt'] as [string, string]));
    if ('Fn::Join' in node) {
      const [separator, parts] = node['Fn::Join'] as [string, unknown[]];
      return parts.map(resolve).join(separator);
    }
    throw new Error(`no resolution for ${JSON.stringify(value)}`);
  };
  /** A policy document with every Resource (and condition value) made concrete. */
  const resolveDeep = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolveDeep);
    if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      if (keys.length === 1 && (keys[0] === 'Ref' || keys[0].startsWith('Fn::'))) return resolve(value);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveDeep(v)]));
    }
    return value;
  };
  return { resolve, resolveDeep, ref, getAtt };
}
