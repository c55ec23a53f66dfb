/** The OpenAPI document is generated from the handler's zod schemas and docs/openapi.json is current. */
import { describe, it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { leadEndpointDocument } from '../../../functions/core/intake/openapi.js';
import { render } from '../../../scripts/gen-openapi.js';

describe('the OpenAPI document', () => {
  it('is committed as generated (run `npm run docs:openapi` after changing the schemas)', () => {
    expect(readFileSync('docs/openapi.json', 'utf8')).toBe(render());
  });

  it('describes every lead field with the bounds the validator enforces', () => {
    const schema = leadEndpointDocument().components.schemas.LeadRequest as { properties: Record<string, { maxLength?: number }> };
    expect(Object.keys(schema.properties).sort()).toEqual(
      ['address', 'custom_fields', 'email', 'first_name', 'last_name', 'name', 'notes', 'phone', 'service', 'sms_consent', 'sms_consent_source'],
    );
    expect(schema.properties.first_name.maxLength).toBe(100);
    expect(schema.properties.notes.maxLength).toBe(5000);
    expect(schema.properties.email.maxLength).toBe(254);
  });

  it('documents every status the endpoint answers', () => {
    const { paths } = leadEndpointDocument();
    expect(Object.keys(paths['/api/webhook/leads'].post.responses).sort()).toEqual(['200', '201', '303', '400', '401', '402', '403', '409', '413', '415', '422', '429', '500', '503']);
    expect(Object.keys(paths['/api/webhook/leads'].get.responses).sort()).toEqual(['200', '401', '403', '429', '500']);
  });
});
