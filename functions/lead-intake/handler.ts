/** POST/GET /api/webhook/leads: the lead endpoint (functions/core/intake/handle-lead-request.ts). */
import { httpAdapter } from '../adapters/http-adapter.js';
import { handleLeadRequest } from '../core/intake/handle-lead-request.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(httpAdapter(handleLeadRequest));
