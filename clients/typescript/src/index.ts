/** `@memstream/client`: the TypeScript client of the memstream HTTP API. */

export { MemstreamClient, MemstreamClient as Client } from "./client.js";
export {
  ApiError,
  ErrorCode,
  MemstreamError,
  ProtocolError,
  TaskPending,
  TransportError,
} from "./errors.js";
export type { ErrorDetails } from "./errors.js";
export { parse as parseJson, stringify as stringifyJson } from "./json.js";
export type {
  AddOptions,
  AddStructuredOptions,
  BatchDeleteOptions,
  ItemPutOptions,
  Placement,
  SessionCloseOptions,
  UpdateEntityOptions,
  UpdateOptions,
  UserRef,
  WriteOptions,
} from "./writes.js";
export type {
  ChangeLogOptions,
  ContextOptions,
  EntitiesOptions,
  EntityOptions,
  ItemNamespacesOptions,
  ItemScope,
  ItemSearchOptions,
  ProfileOptions,
  RecallOptions,
  UserListOptions,
  ViewOptions,
  WaitOptions,
} from "./reads.js";
export { DEFAULT_RETRY, DEFAULT_URL, NO_RETRY, newRequestId } from "./transport.js";
export type { ClientOptions, RetryPolicy } from "./transport.js";
export type * from "./types.js";
