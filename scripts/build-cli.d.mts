// Types of scripts/build-cli.mjs (plain JavaScript, so that bin/crm.mjs runs it without a compiler).
export const root: string;
export const bundleFile: string;
export const metaFile: string;
export const binLink: string;
export const helpFile: string;
export function linkBin(): void;
export function buildCli(): Promise<void>;
