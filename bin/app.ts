/** CDK entry (`npx cdk synth|deploy -c stage=<stage>`); see docs/deploy.md. */
import { buildApp, StageConfigError } from '../lib/stacks/app.js';

try {
  buildApp().app.synth();
} catch (error) {
  // A stage's settings are wrong or missing: say what to do, without a stack trace.
  if (!(error instanceof StageConfigError)) throw error;
  console.error(`\n${error.message}\n`);
  process.exit(1);
}
