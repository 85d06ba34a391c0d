/**
 * What the client throws: one base class, so a caller catches `MemstreamError` alone.
 *
 *     MemstreamError           anything this client throws (`code` null unless the API said one)
 *     ├── ApiError             the API answered `code` != 0: `code`, `msg`, `traceId`,
 *     │                        `httpStatus`, `requestId` (a write's, to resend), `data`, `retryAfterS`
 *     ├── TransportError       no answer (refused, reset, timed out; `cause` is fetch's error,
 *     │                        `nothingSent` when the connection was never made)
 *     ├── ProtocolError        the answer is not memstream's envelope (a proxy's page)
 *     └── TaskPending          `waitTask`/`waitExport` ran out of time (the work goes on)
 *
 * The codes are the API's (docs/api.md#error-codes); `ErrorCode` names them.
 */

/** The API's error codes (`memstream/schemas/errors.py`). */
export const ErrorCode = {
  BAD_PARAMETER: 40001,
  UNAUTHENTICATED: 40101,
  SWITCHED_OFF: 40301,
  CROSS_APP_CLOSED: 40302,
  NOT_FOUND: 40401,
  REQUEST_CONFLICT: 40901,
  CAPACITY_FULL: 42901,
  IMPORTANT_LIMIT: 42902,
  RATE_LIMITED: 42910,
  INTERNAL: 50000,
  EXTRACTION_FAILED: 50001,
  UNAVAILABLE: 50301,
  RECALL_TIMEOUT: 50401,
} as const;

export interface ErrorDetails {
  code?: number | null;
  msg?: string;
  httpStatus?: number;
  traceId?: string | null;
  requestId?: string | null;
  data?: unknown;
  retryAfterS?: number | null;
  cause?: unknown;
  nothingSent?: boolean;
}

/** The base of everything this client throws. */
export class MemstreamError extends Error {
  /** the API's envelope code; null when the API gave none (no answer, not an envelope) */
  readonly code: number | null;
  /** the API's message (for an API error), else the client's */
  readonly msg: string;
  /** the HTTP status of the answer; 0 when there was none */
  readonly httpStatus: number;
  /** the request's trace id, to quote to an operator */
  readonly traceId: string | null;
  /** a write's idempotency key: resend the write with it and it is applied once */
  readonly requestId: string | null;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = details.code ?? null;
    this.msg = details.msg ?? message;
    this.httpStatus = details.httpStatus ?? 0;
    this.traceId = details.traceId ?? null;
    this.requestId = details.requestId ?? null;
  }
}

/** The API refused or failed the request; `code` is the envelope's (never 0). */
export class ApiError extends MemstreamError {
  declare readonly code: number;
  /** the envelope's `data` (a 50301 on a write holds `request_id`) */
  readonly data: unknown;
  /** seconds, from `Retry-After` (42910, 50301) */
  readonly retryAfterS: number | null;

  constructor(code: number, msg: string, details: ErrorDetails = {}) {
    const trace = details.traceId ? ` (trace_id ${details.traceId})` : "";
    super(`${code}: ${msg}${trace}`, { ...details, code, msg });
    this.data = details.data ?? null;
    this.retryAfterS = details.retryAfterS ?? null;
  }
}

/** The request got no answer. A write may still have landed: resend it with `requestId`. */
export class TransportError extends MemstreamError {
  /** the connection was never made, so nothing reached the server */
  readonly nothingSent: boolean;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details);
    this.nothingSent = details.nothingSent ?? false;
  }
}

/** The server answered something that is not a memstream envelope. */
export class ProtocolError extends MemstreamError {}

/** A wait gave up while the work was still going on (not failed). */
export class TaskPending extends MemstreamError {
  readonly taskId: string;
  readonly status: string;

  constructor(taskId: string, status: string) {
    super(`${taskId} still ${status} when the wait ran out`);
    this.taskId = taskId;
    this.status = status;
  }
}
