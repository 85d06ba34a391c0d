/**
 * The read endpoints of `/memory/v1` and the waits on an add or an export, as the Python
 * client has them (`memstream/_reads.py`), in camelCase. A wait is a call repeated until
 * its answer settles (`Call.until`).
 */

import { ApiError } from "./errors.js";
import { V1 } from "./transport.js";
import type {
  ChangeLogPage,
  Context,
  Entities,
  EntityDetail,
  ExportStatus,
  History,
  Instant,
  Item,
  ItemFound,
  ItemNamespaces,
  ItemPage,
  JsonObject,
  Level,
  MemType,
  OpType,
  Ownership,
  Profile,
  RecallResult,
  TaskStatus,
  Turn,
  UserMemories,
  UserId,
} from "./types.js";
import { Writes } from "./writes.js";

/** The turns the context call reads (`memstream/schemas/enums.py: Role`). */
const ROLES = new Set(["user", "assistant", "system"]);

export interface RecallOptions {
  appId?: string;
  sessionId?: string;
  includeGlobal?: boolean;
  crossApp?: boolean;
  ownership?: Ownership[];
  memType?: MemType[];
  customTags?: string[];
  topK?: number;
  minRelevance?: number;
  includeArchived?: boolean;
  timeoutMs?: number;
  /** time travel: the memories valid at that instant */
  asOf?: Instant;
  /** only memories linked to one of these entities (a name, an alias or an entity_id) */
  entities?: string[];
  /** the context budget: the best-ranked memories that fit whole (`chars_used` says how many) */
  maxChars?: number;
  /** false: an inspection, not a use (no recall hit is counted; the ranking is the same) */
  recordHit?: boolean;
}

/** The scope of a key-value item (docs/api.md#key-value-items). */
export interface ItemScope {
  appId?: string;
  sessionId?: string;
}

export interface ItemSearchOptions extends ItemScope {
  namespacePrefix?: string[];
  /** also the scopes beneath this one the key may read (GLOBAL: every app's and
   * session's; an app: its sessions'); each item names its `app_id` and `session_id` */
  subtree?: boolean;
  query?: string;
  /** `{field: value}` or `{field: {$eq|$ne|$gt|$gte|$lt|$lte: value}}`, all must match */
  filter?: JsonObject;
  limit?: number;
  offset?: number;
}

export interface ItemNamespacesOptions extends ItemScope {
  /** labels from the start; `"*"` matches any one */
  prefix?: string[];
  /** labels from the end; `"*"` matches any one */
  suffix?: string[];
  maxDepth?: number;
  limit?: number;
  offset?: number;
  /** also the namespaces of the scopes beneath this one the key may read */
  subtree?: boolean;
}

/** Which memories a view reads: `appId`'s and (unless `includeGlobal` is false) GLOBAL. */
export interface ViewOptions {
  appId?: string;
  includeGlobal?: boolean;
}

export interface ChangeLogOptions {
  appId?: string;
  level?: Level;
  opTypes?: OpType[];
  start?: Instant;
  end?: Instant;
  page?: number;
  pageSize?: number;
}

export interface UserListOptions {
  includeDeleted?: boolean;
  page?: number;
  pageSize?: number;
}

export interface EntitiesOptions extends ViewOptions {
  type?: string;
  page?: number;
  pageSize?: number;
}

export interface EntityOptions extends ViewOptions {
  entityId?: string;
  name?: string;
  maxChars?: number;
}

export interface ProfileOptions extends ViewOptions {
  /** a name or an entity_id: only the memories naming it */
  entity?: string;
  maxChars?: number;
}

export interface ContextOptions extends ViewOptions {
  /** the agent's last turns as a chat API writes them (`{role, content}`) */
  messages?: Turn[];
  query?: string;
  maxChars?: number;
  /** false: the memories shown are not counted as recall hits */
  countHit?: boolean;
}

export interface WaitOptions {
  /** give up after this many ms (default 60 s): `TaskPending` */
  timeoutMs?: number;
  /** poll every this many ms (default 200) */
  everyMs?: number;
}

/** An entity view's scope; undefined (left out) when the caller names neither part. */
function viewScope(o: ViewOptions): { app_id?: string; include_global?: boolean } | undefined {
  if (o.appId === undefined && o.includeGlobal === undefined) return undefined;
  return { app_id: o.appId, include_global: o.includeGlobal };
}

/** A failed add surfaces as the error of its code (e.g. 50001 extraction failed). */
function taskFailed(task: TaskStatus): void {
  if (task.status === "failed") {
    throw new ApiError(task.code ?? 50000, `task ${task.task_id} failed: ${task.reason ?? "?"}`);
  }
}

const settled = (task: TaskStatus) => task.status === "done" || task.status === "failed";

export abstract class Reads extends Writes {
  /** The memories relevant to `query` that the scope allows, best first. */
  recall(userId: UserId, query: string, options: RecallOptions = {}): Promise<RecallResult> {
    const o = options;
    const filter: JsonObject = {};
    if (o.ownership) filter["ownership"] = o.ownership;
    if (o.memType) filter["mem_type"] = o.memType;
    if (o.customTags) filter["custom_tags"] = o.customTags;
    return this.read("recall", {
      user_id: userId,
      query,
      scope: {
        app_id: o.appId,
        session_id: o.sessionId,
        include_global: o.includeGlobal,
        cross_app: o.crossApp === undefined ? undefined : { enabled: o.crossApp },
      },
      filter,
      top_k: o.topK,
      min_relevance: o.minRelevance,
      include_archived: o.includeArchived,
      timeout_ms: o.timeoutMs,
      as_of: o.asOf,
      entities: o.entities,
      max_chars: o.maxChars,
      record_hit: o.recordHit,
    });
  }

  /** The memory, the chain of what it superseded and what superseded it, its changes. */
  history(userId: UserId, memoryId: string): Promise<History> {
    return this.read("history", { user_id: userId, memory_id: memoryId });
  }

  /** One page of the user's changes, newest first. */
  changeLog(userId: UserId, options: ChangeLogOptions = {}): Promise<ChangeLogPage> {
    return this.read("change_log", {
      user_id: userId,
      app_id: options.appId,
      level: options.level,
      op_types: options.opTypes,
      start: options.start,
      end: options.end,
      page: options.page,
      page_size: options.pageSize,
    });
  }

  /** One page of all the user's memories (history included), grouped by scope. */
  userList(userId: UserId, options: UserListOptions = {}): Promise<UserMemories> {
    return this.read("user/list", {
      user_id: userId,
      include_deleted: options.includeDeleted,
      page: options.page,
      page_size: options.pageSize,
    });
  }

  /** `userList` (`user/list`) under the name the API's docs give it. */
  list(userId: UserId, options: UserListOptions = {}): Promise<UserMemories> {
    return this.userList(userId, options);
  }

  /** One page of the user's entities (people, places, ...), most memories first. */
  entities(userId: UserId, options: EntitiesOptions = {}): Promise<Entities> {
    return this.read("entities", {
      user_id: userId,
      scope: viewScope(options),
      type: options.type,
      page: options.page,
      page_size: options.pageSize,
    });
  }

  /** One entity by `entityId` or `name` (exactly one; a name matches an alias, any case):
   * a summary of what is true of it now and every memory naming it, in time order. */
  entity(userId: UserId, options: EntityOptions): Promise<EntityDetail> {
    return this.read("entity", {
      user_id: userId,
      scope: viewScope(options),
      entity_id: options.entityId,
      name: options.name,
      max_chars: options.maxChars,
    });
  }

  /** Who the user is and what matters now, for the start of a session, within
   * `maxChars` (default 2,000) (docs/api.md#profile). */
  profile(userId: UserId, options: ProfileOptions = {}): Promise<Profile> {
    return this.read("profile", {
      user_id: userId,
      scope: viewScope(options),
      entity: options.entity,
      max_chars: options.maxChars,
    });
  }

  /** What to put in the prompt for the agent's next turn: the profile, the memories
   * relevant to `query` (else to the last user turns of `messages`) and the entities they
   * name, as `items` and one `text` within `maxChars` (docs/api.md#context). Of each
   * message only `role` and `content` are sent; a turn of another role (a tool's) or
   * without text content is left out. */
  context(userId: UserId, options: ContextOptions = {}): Promise<Context> {
    const turns = options.messages
      ?.filter((m) => ROLES.has(m.role) && typeof m.content === "string")
      .map((m) => ({ role: m.role, content: m.content }));
    return this.read("context", {
      user_id: userId,
      scope: viewScope(options),
      messages: turns,
      query: options.query,
      max_chars: options.maxChars,
      count_hit: options.countHit,
    });
  }

  /** The key-value item at `key` in `namespace` of the scope; null when absent. */
  async getItem(
    userId: UserId,
    namespace: string[],
    key: string,
    options: ItemScope = {},
  ): Promise<Item | null> {
    try {
      const found = await this.read<ItemFound>("items/get", {
        user_id: userId,
        app_id: options.appId,
        session_id: options.sessionId,
        namespace,
        key,
      });
      return found.item;
    } catch (err) {
      if (err instanceof ApiError && err.code === 40401) return null;
      throw err;
    }
  }

  /** The scope's items under `namespacePrefix` whose values pass `filter`: by relevance
   * to `query` (`score`), else most recently updated first. */
  searchItems(userId: UserId, options: ItemSearchOptions = {}): Promise<ItemPage> {
    return this.read("items/search", {
      user_id: userId,
      app_id: options.appId,
      session_id: options.sessionId,
      namespace_prefix: options.namespacePrefix,
      query: options.query,
      filter: options.filter,
      limit: options.limit,
      offset: options.offset,
      subtree: options.subtree || undefined,
    });
  }

  /** The distinct namespaces of the scope's items, cut to `maxDepth` labels, sorted. */
  listItemNamespaces(userId: UserId, options: ItemNamespacesOptions = {}): Promise<ItemNamespaces> {
    return this.read("items/namespaces", {
      user_id: userId,
      app_id: options.appId,
      session_id: options.sessionId,
      prefix: options.prefix,
      suffix: options.suffix,
      max_depth: options.maxDepth,
      limit: options.limit,
      offset: options.offset,
      subtree: options.subtree || undefined,
    });
  }

  /** The status of an `add`. */
  task(taskId: string): Promise<TaskStatus> {
    return this.run({ method: "GET", path: `${V1}/tasks/${encodeURIComponent(taskId)}` });
  }

  /** Poll `tasks/{taskId}` until the add is applied: its status when `done`; a failed add
   * throws the `ApiError` of its code; `TaskPending` after `timeoutMs`. */
  waitTask(taskId: string, options: WaitOptions = {}): Promise<TaskStatus> {
    return this.run<TaskStatus>({
      method: "GET",
      path: `${V1}/tasks/${encodeURIComponent(taskId)}`,
      until: settled,
      pollMs: options.timeoutMs ?? 60_000,
      pollEveryMs: options.everyMs ?? 200,
      check: taskFailed,
    });
  }

  /** An export's state; once `done` it carries a signed download `url`. */
  exportStatus(exportId: string, options: { linkTtlS?: number } = {}): Promise<ExportStatus> {
    let path = `${V1}/export/${encodeURIComponent(exportId)}`;
    if (options.linkTtlS !== undefined) path += `?link_ttl_s=${Math.trunc(options.linkTtlS)}`;
    return this.run({ method: "GET", path });
  }

  /** Poll `exportStatus` until the export is no longer running. */
  waitExport(exportId: string, options: WaitOptions = {}): Promise<ExportStatus> {
    return this.run<ExportStatus>({
      method: "GET",
      path: `${V1}/export/${encodeURIComponent(exportId)}`,
      until: (x) => x.status !== "running",
      pollMs: options.timeoutMs ?? 60_000,
      pollEveryMs: options.everyMs ?? 200,
    });
  }

  /** The lines of a finished export (`ExportStatus.url`, a signed link). */
  downloadExport(url: string): Promise<JsonObject[]> {
    return this.run({ method: "GET", path: url, ndjson: true });
  }
}
