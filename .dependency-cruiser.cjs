/**
 * Import rules of the domain (docs/architecture.md#import-rules): folders follow the pipeline and imports point one way.
 *   platform ← tenancy ← intake;  platform ← events → delivery;  crm reads tenancy and intake;
 *   the domain never imports handlers (functions/<name>/), the shared edges, the CLI, the local
 *   stack or the CDK stacks. `npm run lint:deps` (part of `npm test`) fails on any violation.
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

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: { path: '^(functions|lib|bin)/' }, to: { circular: true } },
    onlyMayImport('platform', []),
    onlyMayImport('tenancy', ['platform']),
    onlyMayImport('intake', ['platform', 'tenancy']),
    onlyMayImport('crm', ['platform', 'tenancy', 'intake']),
    onlyMayImport('delivery', ['platform', 'tenancy']),
    onlyMayImport('events', ['platform', 'tenancy', 'delivery', 'crm']),
    onlyMayImport('settings', ['platform', 'tenancy', 'intake', 'crm', 'events', 'delivery']),
    {
      name: 'no-loose-domain-files',
      comment: 'every domain module lives in the folder of its stage',
      severity: 'error',
      from: { path: '^functions/core/[^/]+$' },
      to: {},
    },
    {
      name: 'domain-knows-no-edge',
      comment: 'the domain takes plain values: it imports only the domain, lib/topology.ts and packages, never a handler, an edge, the CLI, the local stack, the CDK or a script',
      severity: 'error',
      from: { path: core },
      to: { pathNot: [core, '^lib/topology[.]ts$', '(^|/)node_modules/', '^node:'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'domain-knows-no-edge-packages',
      comment: 'CDK, the CLI framework and middy belong to the stacks, the CLI and the edges',
      severity: 'error',
      from: { path: core },
      to: { path: '(^|/)node_modules/(aws-cdk-lib|constructs|commander|@middy)/' },
    },
    {
      name: 'topology-is-data',
      comment: 'lib/topology.ts is read by the domain, the stacks and the local stack: it imports only the error shapes of its gateway answers, and the client fields a lead\'s trail may read (its IAM grant)',
      severity: 'error',
      from: { path: '^lib/topology[.]ts$' },
      to: { pathNot: ['^functions/core/platform/errors[.]ts$', '^functions/core/settings/trail-fields[.]ts$', '^node:'], dependencyTypesNot: ['core', 'npm', 'npm-dev', 'type-only'] },
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
      comment: 'Lambda/API Gateway event types stay at the edge (functions/<name>/, functions/edge/)',
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
