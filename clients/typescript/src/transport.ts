/**
 * One place that sends a call: its request, the reading of its answer, and retries.
 *
 * A `Call` says what to send and how to read the answer; `Transport.run` sends it with
 * fetch, reads the envelope (`data`, or the `ApiError` of any other `code`) and sends it
 * again when that is safe (docs/api.md#retrying-and-idempotent-writes-request_id):
 * - 429 (42910): the rate limiter refuses before anything runs, so always;
 * - 503 (50301): a store or the broker did not answer, unless the call is not
 *   idempotent (starting an export);
 * - no answer: when the connection was never made (nothing was sent), always; after it
 *   was made (reset, timed out), when the call is idempotent.
 * A write is made idempotent by its `request_id`, drawn once per call before the first
 * attempt and sent with every retry: the API turns it into the add's task id or the
 * command id, so a resend never writes twice. Each wait is at least the server's
 * `Retry-After` (else an exponential, jittered backoff); a call gives up after
 * `maxAttempts` or when the next wait would end past `budgetMs`, throwing the last error.
 * A poll (`until`) repeats every `pollEveryMs` until its answer settles or `pollMs` pass.
 */

import { ApiError, MemstreamError, ProtocolError, TaskPending, TransportError } from "./errors.js";
import { parse, stringify } from "./json.js";

export const V1 = "/memory/v1";
/** the body's user, for a balancer hashing on users (docs/api.md#the-envelope) */
export const ROUTE_HEADER = "X-Memstream-User";
export const USER_AGENT = "memstream-client-ts/0.1";
export const DEFAULT_URL = "http://127.0.0.1:8000";

/** How hard one call tries (the Python client's `RetryPolicy`, in milliseconds). */
export interface RetryPolicy {
  /** attempts in all, the first included */
  maxAttempts: number;
  /** never wait past this many ms from the first attempt */
  budgetMs: number;
  /** the first backoff (doubling, plus up to this much jitter) */
  backoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  budgetMs: 30_000,
  backoffMs: 200,
  maxBackoffMs: 5_000,
});
/** One attempt: errors are thrown as they come. */
export const NO_RETRY: Readonly<RetryPolicy> = Object.freeze({ ...DEFAULT_RETRY, maxAttempts: 1 });

export interface ClientOptions {
  /** sent as `Authorization: Bearer <apiKey>` */
  apiKey?: string | null;
  /** each attempt's limit, ms (default 30 s) */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** a fetch of your own (a proxy, a custom agent, a test double); default the global one */
  fetch?: typeof fetch;
  /** extra headers on every request */
  headers?: Record<string, string>;
}

/** One API call. */
export interface Call<T> {
  method: "GET" | "POST";
  /** a path under the base URL, or a full URL (an export's signed link) */
  path: string;
  body?: Record<string, unknown>;
  /** a write's idempotency key, reported on its errors */
  requestId?: string;
  /** false: not resent after a 503 or a dropped connection (default true) */
  idempotent?: boolean;
  /** the answer is a download of JSON lines, not an envelope */
  ndjson?: boolean;
  /** a poll: repeat while this is false, at most `pollMs`, every `pollEveryMs` */
  until?: (found: T) => boolean;
  pollMs?: number;
  pollEveryMs?: number;
  /** may throw on a settled answer (a failed task) */
  check?: (found: T) => void;
}

/** Connection errors with which nothing reached the server (undici's `cause.code`). */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export function newRequestId(): string {
  return `c_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** `Retry-After` in seconds: a number of seconds or an HTTP date. */
export function retryAfterS(value: string | null): number | null {
  if (!value) return null;
  const seconds = Number(value.trim());
  if (value.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isFinite(when) ? Math.max(0, (when - Date.now()) / 1000) : null;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Transport {
  readonly baseUrl: string;
  readonly retry: Readonly<RetryPolicy>;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(baseUrl: string = DEFAULT_URL, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    if (!/^https?:\/\/[^/]/.test(this.baseUrl) || !URL.canParse(this.baseUrl)) {
      // refused here, not sent (and retried) as a request that can never go out
      throw new MemstreamError(`the API's base URL must be http(s)://host[:port]: ${baseUrl}`);
    }
    this.retry = Object.freeze({ ...DEFAULT_RETRY, ...options.retry });
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = { "User-Agent": USER_AGENT, ...options.headers };
    if (options.apiKey) this.headers["Authorization"] = `Bearer ${options.apiKey}`;
  }

  /** A write (POST): its idempotency key is fixed here, before the first attempt. */
  protected write<T>(path: string, requestId: string | undefined, body: object): Promise<T> {
    const rid = requestId ?? newRequestId();
    return this.run<T>({
      method: "POST",
      path: `${V1}/${path}`,
      body: { ...body, request_id: rid },
      requestId: rid,
    });
  }

  /** A read (POST, or a write whose repeat is harmless). */
  protected read<T>(path: string, body: object): Promise<T> {
    return this.run<T>({ method: "POST", path: `${V1}/${path}`, body: { ...body } });
  }

  /** Send `call`, again while the error is transient (see the module doc) or the poll unsettled. */
  protected async run<T>(call: Call<T>): Promise<T> {
    const started = Date.now();
    const policy = this.retry;
    for (let attempt = 1; ; attempt++) {
      let failure: unknown = undefined;
      let pending: T | undefined = undefined;
      try {
        const found = await this.once(call);
        if (!call.until || call.until(found)) {
          call.check?.(found);
          return found;
        }
        pending = found;
      } catch (err) {
        if (!this.transient(err, call)) throw err;
        failure = err;
      }
      const wait =
        failure === undefined ? (call.pollEveryMs ?? 200) : this.backoff(attempt, failure);
      const limit = call.until ? (call.pollMs ?? 60_000) : policy.budgetMs;
      const outOfAttempts = !call.until && attempt >= policy.maxAttempts;
      if (outOfAttempts || Date.now() - started + wait > limit) {
        if (failure !== undefined) throw failure;
        throw pendingError(pending);
      }
      await sleep(wait);
    }
  }

  private backoff(attempt: number, err: unknown): number {
    const { backoffMs, maxBackoffMs } = this.retry;
    const exp = Math.min(maxBackoffMs, backoffMs * 2 ** (attempt - 1));
    const jittered = Math.min(maxBackoffMs, exp + Math.random() * backoffMs);
    const floor = err instanceof ApiError && err.retryAfterS !== null ? err.retryAfterS * 1000 : 0;
    return Math.max(jittered, floor);
  }

  private transient<T>(err: unknown, call: Call<T>): boolean {
    const idempotent = call.idempotent ?? true;
    if (err instanceof TransportError) return err.nothingSent || idempotent;
    if (!(err instanceof ApiError)) return false;
    return err.httpStatus === 429 || (err.httpStatus === 503 && idempotent);
  }

  private async once<T>(call: Call<T>): Promise<T> {
    const url = /^https?:\/\//.test(call.path) ? call.path : `${this.baseUrl}${call.path}`;
    const headers: Record<string, string> = { ...this.headers };
    const user = call.body?.["user_id"];
    if (typeof user === "bigint" || (typeof user === "number" && Number.isSafeInteger(user))) {
      headers[ROUTE_HEADER] = String(user);
    }
    let body: string | undefined;
    if (call.body !== undefined) {
      body = stringify(call.body);
      headers["Content-Type"] = "application/json";
    }
    let resp: Response;
    let text: string;
    try {
      resp = await this.fetchImpl(url, {
        method: call.method,
        headers,
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await resp.text();
    } catch (err) {
      throw unanswered(call, err);
    }
    return answerOf(call, resp, text);
  }
}

function unanswered<T>(call: Call<T>, err: unknown): TransportError {
  // undici's cause has the socket's code; a happy-eyeballs connect, an AggregateError's
  type Cause = { code?: unknown; errors?: { code?: unknown }[] };
  const cause = (err as { cause?: Cause } | null)?.cause;
  const found = cause?.code ?? cause?.errors?.[0]?.code;
  const code = typeof found === "string" ? found : "";
  const what = code || (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
  return new TransportError(`${call.method} ${call.path}: no answer (${what})`, {
    requestId: call.requestId ?? null,
    cause: err,
    nothingSent: NOT_SENT.has(code),
  });
}

/** `data` of the envelope, or the `ApiError` of its code. */
function answerOf<T>(call: Call<T>, resp: Response, text: string): T {
  if (call.ndjson && resp.status === 200) {
    return text
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => parse(line)) as T;
  }
  let raw: unknown = undefined;
  try {
    raw = parse(text);
  } catch {
    // not JSON: reported below
  }
  const env = raw as { code?: unknown; msg?: unknown; trace_id?: unknown; data?: unknown };
  if (typeof env !== "object" || env === null || !Number.isInteger(env.code)) {
    throw new ProtocolError(
      `HTTP ${resp.status} from ${call.path} is not a memstream answer: ${JSON.stringify(text.slice(0, 200))}`,
      { httpStatus: resp.status },
    );
  }
  if (env.code !== 0) {
    const data = env.data ?? null;
    const rid = (data as { request_id?: unknown } | null)?.request_id;
    throw new ApiError(env.code as number, typeof env.msg === "string" ? env.msg : "", {
      httpStatus: resp.status,
      traceId: (typeof env.trace_id === "string" && env.trace_id) || resp.headers.get("x-trace-id"),
      requestId: typeof rid === "string" ? rid : (call.requestId ?? null),
      data,
      retryAfterS: retryAfterS(resp.headers.get("retry-after")),
    });
  }
  return env.data as T;
}

function pendingError(last: unknown): MemstreamError {
  const found = (last ?? {}) as { task_id?: string; export_id?: string; status?: string };
  return new TaskPending(found.task_id ?? found.export_id ?? "?", found.status ?? "?");
}
