/**
 * zod's tree-shakable `zod/mini` API, with the English messages classic zod installs on its own
 * (mini installs none: every default message would read "Invalid input"). Import zod from here, so
 * no schema is built or parsed before the messages are set. Cycle support (classic's memoizer) is
 * left out: every input we validate comes from JSON.parse and cannot contain cycles.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
