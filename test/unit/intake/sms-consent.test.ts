/**
 * SMS consent as forms send it: `"true"` (a string) is consent, held to the same rule as `true`
 * (docs/leads.md: a consent source and a phone are required), so consent is never stored without
 * where it was given or a number to text.
 */
import { describe, it, expect } from '@jest/globals';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { DomainError } from '../../../functions/core/platform/errors.js';

const fieldsRefused = (body: Record<string, unknown>) => {
  try {
    parseLead(body);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).status).toBe(422);
    return ((error as DomainError).extra.errors ?? []).map((e) => e.field).sort();
  }
};

describe('sms_consent', () => {
  it.each([true, 'true'])('%j without a source or a phone is refused, naming both', (consent) => {
    expect(fieldsRefused({ first_name: 'Ada', sms_consent: consent })).toEqual(['phone', 'sms_consent_source']);
    expect(fieldsRefused({ first_name: 'Ada', sms_consent: consent, phone: '+1 212 555 0199' })).toEqual(['sms_consent_source']);
    expect(fieldsRefused({ first_name: 'Ada', sms_consent: consent, sms_consent_source: 'contact page' })).toEqual(['phone']);
    expect(fieldsRefused({ first_name: 'Ada', sms_consent: consent, sms_consent_source: '  ', phone: '' })).toEqual(['phone', 'sms_consent_source']);
  });

  it.each([true, 'true'])('%j with a source and a phone is stored as consent, with its source', (consent) => {
    expect(parseLead({ first_name: 'Ada', sms_consent: consent, sms_consent_source: 'contact page', phone: '+1 212 555 0199' }))
      .toMatchObject({ sms_consent: true, sms_consent_source: 'contact page', phone: '+12125550199' });
  });

  it.each([false, 'false', '', undefined])('%j is no consent, and needs neither', (consent) => {
    expect(parseLead({ first_name: 'Ada', sms_consent: consent })).toMatchObject({ sms_consent: false });
    expect(parseLead({ first_name: 'Ada', sms_consent: consent, sms_consent_source: 'ignored' })).not.toHaveProperty('sms_consent_source');
  });

  it('refuses other strings rather than guessing', () => {
    expect(fieldsRefused({ first_name: 'Ada', sms_consent: 'yes' })).toEqual(['sms_consent']);
  });
});
