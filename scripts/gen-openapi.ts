/** Writes docs/openapi.json (the lead endpoint from its zod schemas, and the settings API) (`npm run docs:openapi`); a unit test checks it is current. */
import { writeFileSync } from 'node:fs';
import { openApiDocument } from '../functions/core/settings/openapi.js';

export const render = () => JSON.stringify(openApiDocument(), null, 2) + '\n';

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync('docs/openapi.json', render());
  console.log('wrote docs/openapi.json');
}
