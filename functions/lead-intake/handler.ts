import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';

// Placeholder until the lead-intake issue lands: every request is unauthenticated.
export const handler = async (_event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => ({
  statusCode: 401,
  headers: { 'Content-Type': 'application/problem+json' },
  body: JSON.stringify({ type: 'https://docs.crm.example/problems/unauthorized', title: 'Unauthorized', status: 401, detail: 'An API key is required.' }),
});
