/**
 * JSON for 64-bit ids. `user_id` is an unsigned 64-bit integer and `custom_tags` may hold
 * any signed 64-bit integer (docs/api.md#limits-and-refused-values), beyond what a
 * JavaScript number holds exactly (2^53). A `bigint` is sent as a bare JSON integer, and
 * an integer of an answer that a number would round is read as a `bigint`, so an id
 * read from one answer and sent back names the same user.
 */

// A bigint travels through JSON.stringify as this marked string, then loses its quotes
// (and an unsafe integer of an answer the other way). A string of the caller's or the
// server's that is exactly a marker would be taken for one: it starts with U+0001, a
// control character that text never holds in practice.
const MARK = "\u0001bigint:";
const MARKED = /"\\u0001bigint:(\d+|-\d+)"/g;
const BIG = new RegExp(`^${MARK}(-?\\d+)$`);

/** `JSON.stringify` that writes a bigint as a JSON integer and a `Date` as ISO 8601. */
export function stringify(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "bigint" ? `${MARK}${v.toString()}` : v,
  );
  return text.replace(MARKED, "$1");
}

/** `JSON.parse` that reads an integer beyond `Number.MAX_SAFE_INTEGER` as a `bigint`. */
export function parse(text: string): unknown {
  const marked = markBigIntegers(text);
  if (marked === text) return JSON.parse(text);
  return JSON.parse(marked, (_key, v: unknown) => {
    if (typeof v !== "string") return v;
    const m = BIG.exec(v);
    return m ? BigInt(m[1] as string) : v;
  });
}

/**
 * The JSON text with each integer token (outside strings) that a number would round
 * turned into a marked string. One pass; text with no long digit run is returned as is.
 */
function markBigIntegers(text: string): string {
  if (!/\d{16}/.test(text)) return text;
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) continue;
    let end = i + 1;
    while (end < text.length && /[0-9.eE+-]/.test(text[end] as string)) end++;
    const token = text.slice(i, end);
    if (/^-?\d{16,}$/.test(token) && !Number.isSafeInteger(Number(token))) {
      out += `${text.slice(from, i)}"\\u0001bigint:${token}"`;
      from = end;
    }
    i = end - 1;
  }
  return out + text.slice(from);
}
