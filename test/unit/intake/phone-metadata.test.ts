/**
 * Lead intake normalizes phones with libphonenumber-js's `min` metadata minus its formats
 * (functions/core/intake/phone-metadata.ts). The copy must be current, and every number must come
 * out exactly as with the full `min` metadata the library ships.
 */
import { describe, it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parsePhoneNumberFromString, getCountryCallingCode, type CountryCode, type MetadataJson } from 'libphonenumber-js/core';
import minMetadata from 'libphonenumber-js/min/metadata';
import examples from 'libphonenumber-js/examples.mobile.json';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { phoneMetadata } from '../../../functions/core/intake/phone-metadata.js';
import { render } from '../../../scripts/gen-phone-metadata.js';

const normalized = (raw: string, metadata: MetadataJson) => {
  const parsed = parsePhoneNumberFromString(raw, 'US', metadata);
  return parsed?.isValid() ? parsed.number : raw;
};

/** For every country: its example number in several spellings, and near misses (a digit more, less, changed). */
function numbers(): string[] {
  const out = ['', '+', '911', '+1', '4155550100', '(415) 555-0100 ext. 12', 'tel:+1-415-555-2671', '+99912345', '+800 1234 5678', '+882 345 678 90', 'not a number'];
  for (const [country, national] of Object.entries(examples as Record<string, string>)) {
    const code = getCountryCallingCode(country as CountryCode, minMetadata);
    for (const n of [national, national.slice(0, -1), national + '7', national.slice(0, -1) + ((Number(national.at(-1)) + 1) % 10)]) {
      out.push(n, `0${n}`, `+${code}${n}`, `+${code} ${n.slice(0, 3)}-${n.slice(3)}`, `00${code}${n}`, `011 ${code} ${n}`);
    }
  }
  return out;
}

describe('the phone metadata of lead intake', () => {
  it('is committed as generated (run `npx tsx scripts/gen-phone-metadata.ts` after upgrading libphonenumber-js)', () => {
    expect(readFileSync('functions/core/intake/phone-metadata.ts', 'utf8')).toBe(render());
  });

  it('normalizes every number exactly as the full min metadata does', () => {
    const all = numbers();
    expect(all.length).toBeGreaterThan(5000);
    const differing = all.filter((raw) => normalized(raw, phoneMetadata) !== normalized(raw, minMetadata));
    expect(differing).toEqual([]);
    // And through the validator itself: E.164 where the number is valid, as sent otherwise.
    for (const raw of all.filter((_, i) => i % 7 === 0 && _.trim() !== '')) {
      expect(parseLead({ name: 'Ada', phone: raw }).phone).toBe(normalized(raw.trim(), minMetadata));
    }
  });

  it('is never asked for the formats it leaves out on the parse-and-validate path', () => {
    // Every numbering plan's formats slot throws when read: parsing and validating must not touch it.
    const trap = (plans: Record<string, unknown[]>) => Object.fromEntries(Object.entries(plans).map(([k, plan]) => [k, new Proxy(plan, {
      get: (target, key, receiver) => { if (key === '4') throw new Error(`formats of ${k} read`); return Reflect.get(target, key, receiver); },
    })]));
    const m = minMetadata as unknown as { countries: Record<string, unknown[]>; nonGeographic: Record<string, unknown[]> };
    const trapped = { ...minMetadata, countries: trap(m.countries), nonGeographic: trap(m.nonGeographic) } as unknown as MetadataJson;
    for (const raw of numbers()) expect(() => normalized(raw, trapped)).not.toThrow();
  });
});
