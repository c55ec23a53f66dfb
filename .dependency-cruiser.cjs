/**
 * Import rules of the domain (docs/architecture.md#import-rules): folders follow the pipeline and imports point one way.
 *   platform ← tenancy ← intake;  platform ← events → delivery;  crm reads tenancy and intake;
 *   notify (notices) reads platform and tenancy, and delivery, events and settings produce notices through it
 *   (the clients store is intake's, intake/clients-store.ts, so crm and settings reach it without a cycle);
 *   notify (telling people by e-mail) reads platform and tenancy, and settings reads it;
 *   the domain never imports handlers (functions/<name>/), the adapters, the front door, the CLI,
 *   the local stack or the CDK stacks; nothing in functions/ imports lib/ (lib/topology.ts reads
 *   functions/core/platform/bindings.ts instead). `npm run lint:deps` (part of `npm test`) fails on any violation.
 */
const core = '^functions/core/';
const stage = (name) => `${core}${name}/`;
const onlyMayImport = (from, allowed) => ({
  name: `${from}-imports`,
  comment: `${from}/ may import only ${allowed.join(', ') || 'nothing else of the domain'}`,
  severity: 'error',
  from: { path: stage(from) },
  to: { path: core, pathNot: [stage(from), ...allowed.map(stage)] },
});
/** Files under `from` may import only `allowed` paths and packages. */
const importsOnly = (name, comment, from, allowed) => ({
  name, comment, severity: 'error',
  from: { path: from },
  to: { pathNot: [...allowed, '(^|/)node_modules/', '^node:'], dependencyTypesNot: ['core'] },
});

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: { path: '^(functions|lib|bin)/' }, to: { circular: true } },
    onlyMayImport('platform', []),
    onlyMayImport('tenancy', ['platform']),
    onlyMayImport('intake', ['platform', 'tenancy']),
    onlyMayImport('crm', ['platform', 'tenancy', 'intake']),
    // notify: what a notice is, recipients, composing and mailing it; its producers live in the stages that see the facts.
    onlyMayImport('notify', ['platform', 'tenancy']),
    onlyMayImport('delivery', ['platform', 'tenancy', 'notify']),
    onlyMayImport('events', ['platform', 'tenancy', 'delivery', 'crm', 'notify']),
    onlyMayImport('settings', ['platform', 'tenancy', 'intake', 'crm', 'events', 'delivery', 'notify']),
    {
      name: 'dynamodb-sdk-only-in-stores',
      comment: 'in functions/core only a store module (<table or item family>-store.ts; the deliveries table\'s is delivery-record.ts; what the stores share is platform/dynamo-store.ts) imports the DynamoDB SDK or platform/dynamo-store.ts, besides platform/deps.ts, which builds the clients through it: everything else asks a store for a named operation (docs/architecture.md#stages-and-what-each-owns)',
      severity: 'error',
      from: {
        path: core,
        pathNot: ['-store[.]ts$', `${core}delivery/delivery-record[.]ts$`, `${core}platform/deps[.]ts$`],
      },
      // platform/dynamo-store.ts (clients, paginated reads, errors) is the stores' own: reading a table through it is reading it outside its store.
      to: { path: ['(^|/)node_modules/@aws-sdk/(lib-dynamodb|client-dynamodb)/', `${core}platform/dynamo-store[.]ts$`] },
    },
    {
      name: 'no-loose-domain-files',
      comment: 'every domain module lives in the folder of its stage',
      severity: 'error',
      from: { path: '^functions/core/[^/]+$' },
      to: {},
    },
    importsOnly('domain-knows-no-adapter', 'the domain takes plain values: it imports only the domain and packages, never a handler, an adapter, the front door, the CLI, the local stack, the CDK or a script', core, [core]),
    {
      name: 'functions-know-no-lib',
      comment: 'the deployed code never imports lib/ (the stacks, the local stack, the CLI, the topology): lib/ reads functions/, never the other way',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^lib/' },
    },
    importsOnly('front-door-is-data', 'functions/front-door/ (routes, WAF rules, gateway answers) is read by the stacks and the local front door: it imports only the domain and itself', '^functions/front-door/', [core, '^functions/front-door/']),
    {
      name: 'domain-knows-no-adapter-packages',
      comment: 'CDK, the CLI framework and middy belong to the stacks, the CLI and the edges',
      severity: 'error',
      from: { path: core },
      to: { path: '(^|/)node_modules/(aws-cdk-lib|constructs|commander|@middy)/' },
    },
    {
      name: 'topology-is-data',
      comment: 'lib/topology.ts is read by the stacks and the local stack: it imports only the bindings it shares with the functions (functions/core/platform/bindings.ts) the client fields a lead\'s trail and the request log may read, and the recipient fields the e-mail functions may name (their IAM grants)',
      severity: 'error',
      from: { path: '^lib/topology[.]ts$' },
      to: { pathNot: ['^functions/core/platform/bindings[.]ts$', '^functions/core/settings/trail-fields[.]ts$', '^functions/core/tenancy/request-log-fields[.]ts$', '^functions/core/notify/recipient-fields[.]ts$', '^node:'], dependencyTypesNot: ['core', 'npm', 'npm-dev', 'type-only'] },
    },
    {
      name: 'local-knows-no-cli',
      comment: 'the local stack runs without the CLI (the CLI reads its stack file)',
      severity: 'error',
      from: { path: '^lib/local/' },
      to: { path: '^lib/cli/' },
    },
    {
      name: 'commands-not-program',
      comment: 'commands register themselves; only the entry point builds the program',
      severity: 'error',
      from: { path: '^lib/cli/commands/' },
      to: { path: '^lib/cli/program[.]ts$' },
    },
    {
      name: 'domain-knows-no-trigger-shapes',
      comment: 'Lambda/API Gateway event types stay in the handlers and adapters (functions/<name>/, functions/adapters/)',
      severity: 'error',
      from: { path: core },
      to: { path: '^(aws-lambda$|node_modules/@types/aws-lambda/)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.mjs'] },
  },
};
