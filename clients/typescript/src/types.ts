/**
 * The shapes of the memstream HTTP API (docs/api.md#endpoints), written from the server's
 * models: answers from `memstream/schemas/responses.py`, the nested request shapes from
 * `memstream/schemas/requests.py` and `memstream/schemas/events.py`. Answers are typed exactly as they come
 * on the wire (snake_case); instants are ISO 8601 strings. The server may add fields to
 * an answer, never remove them, so these types name what a client can rely on.
 *
 * `user_id` is an unsigned 64-bit integer: a `number` while it is a safe integer, a
 * `bigint` above 2^53 (answers are parsed losslessly, see `json.ts`).
 */

/** A user id: an unsigned 64-bit integer (a `bigint` above `Number.MAX_SAFE_INTEGER`). */
export type UserId = number | bigint;

/** An instant sent to the API: a `Date` or an ISO 8601 string (naive means UTC). */
export type Instant = Date | string;

/** A value an open enum may take beyond the ones named (a newer server's). */
type Open<T extends string> = T | (string & {});

export type Level = "GLOBAL" | "APP" | "SESSION";
export type Ownership = "USER" | "AGENT";
export type MemType = Open<"SEMANTIC" | "EPISODIC" | "PROCEDURAL" | "ITEM">;
export type Status = Open<"ACTIVE" | "ARCHIVED" | "DELETED" | "SUPERSEDED">;
export type OpType = Open<
  "ADD" | "UPDATE" | "DELETE" | "MERGE" | "SUPERSEDE" | "ARCHIVE" | "RESTORE" | "PURGE" | "NONE"
>;
export type OpSource = Open<"SYSTEM" | "USER" | "ADMIN">;
export type Role = "user" | "assistant" | "system";

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

// --- request shapes ----------------------------------------------------------------------

/** One turn of an `add` (`memstream/schemas/events.py: Message`). */
export interface Message {
  role: Role;
  content: string;
  /** the speaker's display name: facts about a named speaker name them */
  name?: string;
  msg_id?: string;
  /** when it was said: relative dates resolve against it */
  ts?: Instant;
}

/** How an `add` is extracted (`memstream/schemas/events.py: Strategy`). */
export interface Strategy {
  focus?: string;
  evolution?: "decide" | "append";
  tags?: JsonObject;
  entity_types?: string[];
}

/** One of the agent's last turns, for `context` (other roles are left out). */
export interface Turn {
  role: string;
  content: unknown;
}

/** A delete's or purge's scope (`memstream/schemas/requests.py: Scope`). */
export interface Scope {
  app_id?: string;
  level?: Level;
  session_id?: string;
}

// --- answers ---------------------------------------------------------------------------

export interface AddAccepted {
  task_id: string;
  accepted: boolean;
}

export interface TaskCounts {
  added: number;
  updated: number;
  superseded: number;
  skipped: number;
  evicted: number;
}

/** `tasks/{task_id}`: `accepted` → `processing` → `done` or `failed` (`code`, `reason`). */
export interface TaskStatus {
  task_id: string;
  status: Open<"accepted" | "processing" | "done" | "failed">;
  user_id?: UserId | null;
  tenant_id?: string | null;
  app_id?: string | null;
  kid?: string | null;
  updated_at?: number | null;
  counts?: TaskCounts | null;
  memory_ids?: string[];
  degraded?: boolean;
  warnings?: string[];
  code?: number | null;
  reason?: string | null;
}

export interface StructuredAdded {
  memory_id: string;
  duplicate: boolean;
  evicted?: number | null;
  warnings?: string[];
}

export interface Source {
  session_id: string | null;
  msg_id: string | null;
  /** every source turn (several for a consolidated memory) */
  msg_ids: string[];
}

export interface EntityRef {
  entity_id: string;
  name: string;
  type: string;
}

export interface RecalledMemory {
  memory_id: string;
  content: string;
  ownership: Ownership;
  mem_type: MemType;
  level: Level;
  app_id: string | null;
  session_id: string | null;
  status: Status;
  weight: number;
  relevance: number;
  score: number;
  is_important: boolean;
  created_at: string | null;
  valid_at: string | null;
  invalid_at: string | null;
  custom_tags: JsonObject;
  source: Source;
  entities: EntityRef[];
}

export interface RecallResult {
  hit: boolean;
  memories: RecalledMemory[];
  /** with `maxChars`: the budget asked and the characters the memories use */
  max_chars?: number | null;
  chars_used?: number | null;
}

/** A stored memory as `user/list`, `history` and `entity` show it. */
export interface Memory {
  memory_id: string;
  content: string;
  user_id: UserId;
  app_id: string | null;
  session_id: string | null;
  level: Level;
  ownership: Ownership;
  mem_type: MemType;
  status: Status;
  weight: number;
  is_important: boolean;
  recall_count: number;
  created_at: string | null;
  updated_at: string | null;
  last_recalled_at: string | null;
  expire_at: string | null;
  archived_at: string | null;
  deleted_at: string | null;
  valid_at: string | null;
  invalid_at: string | null;
  superseded_by: string | null;
  custom_tags: JsonObject;
  source: Source;
  entities: EntityRef[];
}

/** One row of the immutable change log. */
export interface Change {
  change_id: string;
  memory_id: string;
  user_id: UserId;
  app_id: string | null;
  level: Level;
  op_type: OpType;
  content_before: string;
  content_after: string;
  reason: string;
  op_source: OpSource;
  op_time: string;
  task_id: string;
  sanitized: boolean;
}

export interface Updated {
  memory_id: string;
  updated: string[];
  reembedded: boolean;
}

export interface Deleted {
  deleted: number;
  memory_ids: string[];
  not_found: string[];
  physical_removal_due?: string | null;
}

export interface Purged extends Deleted {
  crypto_shredded: boolean;
  exports_deleted?: number | null;
  raw_transcripts_expire_within_h?: number | null;
}

export interface History {
  memory: Memory;
  /** the supersede chain, oldest first */
  chain: Memory[];
  changes: Change[];
}

export interface ChangeLogPage {
  items: Change[];
  total: number;
  page: number;
  page_size: number;
  has_more: boolean;
}

/** `user/list` groups by scope: GLOBAL, APP by app id, SESSION by session id. */
export interface ScopedMemories {
  GLOBAL: Memory[];
  APP: Record<string, Memory[]>;
  SESSION: Record<string, Memory[]>;
}

export interface UserMemories {
  memories: ScopedMemories;
  /** the user's profiles this key may read: derived from the memories, listed apart from
   * them and not in `total` (docs/architecture.md#the-profile) */
  profiles?: Memory[];
  total: number;
  page: number;
  page_size: number;
  has_more: boolean;
}

export interface Entity {
  entity_id: string;
  name: string;
  type: string;
  aliases: string[];
  /** how many ACTIVE memories link it */
  memories: number;
  last_seen: string;
}

export interface Entities {
  entities: Entity[];
  total: number;
  page: number;
  page_size: number;
  has_more: boolean;
}

export interface SummaryItem {
  text: string;
  memory_ids: string[];
  msg_ids: string[];
}

export interface EntityDetail {
  entity: Entity;
  /** every match when a name matched more than one (`entity` is the first) */
  entities?: Entity[] | null;
  summary: SummaryItem[];
  memories: Memory[];
}

export interface EntityUpdated {
  op: string;
  entity_id: string;
  name: string;
  type: string;
  memories_changed: number;
  memory_ids: string[];
}

export interface ProfileItem {
  text: string;
  entity?: string | null;
  memory_ids: string[];
  msg_ids: string[];
}

export interface Profile {
  items: ProfileItem[];
  chars_used: number;
  updated_at?: string | null;
}

export interface ContextItem {
  kind: Open<"profile" | "memory" | "entity">;
  text: string;
  memory_ids: string[];
  msg_ids: string[];
  entity?: string | null;
  entity_id?: string | null;
}

/** `context`: the items in reading order and the one `text` an agent pastes into its prompt. */
export interface Context {
  items: ContextItem[];
  text: string;
  chars_used: number;
}

export interface Switched {
  user_id: UserId;
  app_id?: string | null;
  enabled: boolean;
}

export interface SessionClosed {
  promoted: string[];
  dropped: string[];
  refused: string[];
  pending_memory_id?: string | null;
}

export interface ExportStarted {
  export_id: string;
  status: string;
}

/** `export/{export_id}`; the job's numbers come as numeric strings (docs/api.md#endpoints). */
export interface ExportStatus {
  export_id: string;
  status: Open<"running" | "done" | "failed">;
  tenant_id?: string | null;
  user_id?: string | null;
  created_at?: string | null;
  memories?: string | null;
  changes?: string | null;
  finished_at?: string | null;
  reason?: string | null;
  url?: string | null;
  expires?: number | null;
}

/** `items/put` (docs/api.md#key-value-items): `none` is the same value again, or a
 * delete of an absent key. */
export interface ItemPut {
  memory_id: string;
  op: Open<"put" | "delete" | "none">;
}

/** A key-value item: its value exactly as put; `score` a search's relevance (null
 * without a query, or for an item not embedded). */
export interface Item {
  namespace: string[];
  key: string;
  value: JsonObject;
  created_at: string;
  updated_at: string;
  memory_id: string;
  score?: number | null;
  /** the item's scope (a `subtree` search reads several) */
  app_id?: string | null;
  session_id?: string | null;
}

export interface ItemFound {
  item: Item;
}

/** `items/search`: most relevant first with a query, else most recently updated. */
export interface ItemPage {
  items: Item[];
}

export interface ItemNamespaces {
  namespaces: string[][];
}
