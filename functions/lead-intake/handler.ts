/** POST/GET /api/webhook/leads: the lead endpoint (functions/core/intake/handle-lead-request.ts). */
import { httpEdge } from '../edge/http-edge.js';
import { handleLeadRequest } from '../core/intake/handle-lead-request.js';

export const handler = httpEdge(handleLeadRequest);
