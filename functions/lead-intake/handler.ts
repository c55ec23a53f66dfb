/** POST/GET /api/webhook/leads: the lead endpoint (functions/core/leads/intake.ts). */
import { httpEndpoint } from '../core/http/endpoint.js';
import { leadIntake } from '../core/leads/intake.js';

export const handler = httpEndpoint(leadIntake);
