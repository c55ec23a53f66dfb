/** CDK entry (`npx cdk synth|deploy -c stage=<stage>`); see docs/deploy.md. */
import { buildApp } from '../lib/stacks/app.js';

buildApp().app.synth();
