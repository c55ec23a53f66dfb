/** Bounding stored text. */

/** `text` cut to at most `max` UTF-8 bytes, at a character boundary (a receiver's body excerpt decoded with U+FFFD for bad bytes can grow threefold; a lead's copied fields). */
export function clipBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = '';
  let bytes = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > max) break;
    out += char;
  }
  return out;
}
