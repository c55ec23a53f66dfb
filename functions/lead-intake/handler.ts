/** POST/GET /api/webhook/leads: the lead endpoint (functions/core/intake/lead-requests.ts). */
import { httpEndpoint } from '../edge/http-edge.js';
import { leadIntake } from '../core/intake/lead-requests.js';

export const handler = httpEndpoint(leadIntake);
