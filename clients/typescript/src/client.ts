/**
 * The TypeScript client of the memstream HTTP API (docs/api.md#typescript-client).
 *
 * Every endpoint is one method (`writes.ts`, `reads.ts`) that describes its call and
 * hands it to `Transport.run` (`transport.ts`): fetch, the envelope, retries with the
 * same `request_id`. Answers are the API's `data` as typed in `types.ts`; an envelope
 * `code` other than 0 throws an `ApiError` (`errors.ts`).
 *
 *     import { MemstreamClient } from "@memstream/client";
 *
 *     const memory = MemstreamClient.fromEnv();
 *     await memory.addStructured(42, "I am allergic to peanuts.");
 *     const found = await memory.recall(42, "what food should I avoid?");
 */

import { Reads } from "./reads.js";
import { DEFAULT_URL, type ClientOptions } from "./transport.js";

type Env = Record<string, string | undefined>;

export class MemstreamClient extends Reads {
  /** `MEMSTREAM_API_URL` (default `http://127.0.0.1:8000`) and `MEMSTREAM_API_KEY`, from
   * `process.env` (or `env`). For an https API with a private CA, start node with
   * `NODE_EXTRA_CA_CERTS` (the Python client's `MEMSTREAM_API_TLS_CA_FILE`). */
  static fromEnv(options: ClientOptions = {}, env?: Env): MemstreamClient {
    const vars: Env = env ?? (globalThis as { process?: { env?: Env } }).process?.env ?? {};
    return new MemstreamClient(vars["MEMSTREAM_API_URL"] || DEFAULT_URL, {
      apiKey: vars["MEMSTREAM_API_KEY"] || null,
      ...options,
    });
  }
}
