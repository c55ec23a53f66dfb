/** POST/GET /api/webhook/leads: the lead endpoint (functions/core/intake/handle-lead-request.ts). */
import { httpEdge } from '../edge/http-edge.js';
import { handleLeadRequest } from '../core/intake/handle-lead-request.js';
import { instrumented } from '../edge/lambda-edge.js';

export const handler = instrumented(httpEdge(handleLeadRequest));
