// 64-bit integers through the client's JSON (src/json.ts): a bigint goes out as a bare
// integer, an integer a number would round comes back as a bigint, nothing else changes.
import assert from "node:assert/strict";
import { test } from "node:test";

import { parseJson, stringifyJson } from "../dist/index.js";

const BIG = 2n ** 64n - 1n;

test("a bigint is written as a bare JSON integer, a Date as ISO 8601", () => {
  const when = new Date("2026-01-31T12:00:00Z");
  const text = stringifyJson({ user_id: BIG, n: 7, at: when, tags: { k: -(2n ** 63n) } });
  assert.equal(
    text,
    '{"user_id":18446744073709551615,"n":7,"at":"2026-01-31T12:00:00.000Z","tags":{"k":-9223372036854775808}}',
  );
});

test("an integer beyond 2^53 is read as a bigint, a safe one as a number", () => {
  const found = parseJson('{"user_id":18446744073709551615,"small":9007199254740991,"f":1.5e300}');
  assert.deepEqual(found, { user_id: BIG, small: 9007199254740991, f: 1.5e300 });
});

test("digits inside strings and escaped quotes stay text", () => {
  const text = '{"content":"call 18446744073709551615 \\" 99999999999999999999","id":12345678901234567890}';
  assert.deepEqual(parseJson(text), {
    content: 'call 18446744073709551615 " 99999999999999999999',
    id: 12345678901234567890n,
  });
  assert.deepEqual(parseJson("[1, -18446744073709551615, 2.0]"), [1, -18446744073709551615n, 2]);
});

test("a round trip keeps every integer exact", () => {
  const value = { user_id: 2n ** 63n + 5n, list: [1, 2n ** 60n, "x"], nested: { v: null } };
  assert.deepEqual(parseJson(stringifyJson(value)), value);
});
