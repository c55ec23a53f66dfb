/**
 * Import rules of the domain (DESIGN §3): folders follow the pipeline and imports point one way.
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
    {
      name: 'domain-knows-no-edge',
      comment: 'the domain takes plain values: no handler, shared edge, CLI, local stack or CDK code',
      severity: 'error',
      from: { path: core },
      to: { path: '^(functions/(?!core/)|lib/(cli|local|stacks)/|bin/)' },
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
