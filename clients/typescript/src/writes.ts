/**
 * The write endpoints of `/memory/v1` (docs/api.md#endpoints), as the Python client has
 * them (`memstream/_writes.py`), in camelCase. Every write but `switch` (a value set
 * twice is harmless) and `export` carries a `request_id` drawn before the first attempt
 * (`Transport.write`), so a retried write is applied once; pass `requestId` to choose it.
 */

import { Transport, V1 } from "./transport.js";
import type {
  AddAccepted,
  Deleted,
  EntityUpdated,
  ExportStarted,
  Instant,
  ItemPut,
  JsonObject,
  Level,
  MemType,
  Message,
  Ownership,
  Purged,
  Scope,
  SessionClosed,
  Strategy,
  StructuredAdded,
  Switched,
  Updated,
  UserId,
} from "./types.js";

/** A user as purge and export name one: its id, or your own string for it
 * (`{ externalId }`, docs/api.md#usersresolve). */
export type UserRef = UserId | { externalId: string };

function userFields(user: UserRef): { user_id: UserId } | { external_id: string } {
  return typeof user === "object" ? { external_id: user.externalId } : { user_id: user };
}

export interface WriteOptions {
  /** the idempotency key; default a fresh one per call, reused by its retries */
  requestId?: string;
}

export interface Placement {
  appId?: string;
  sessionId?: string;
  level?: Level;
  ownership?: Ownership;
}

export interface AddOptions extends Placement, WriteOptions {
  strategy?: Strategy;
}

export interface AddStructuredOptions extends Placement, WriteOptions {
  memType?: MemType;
  isImportant?: boolean;
  expireAt?: Instant;
  customTags?: JsonObject;
}

export interface UpdateOptions extends WriteOptions {
  content?: string;
  isImportant?: boolean;
  expireAt?: Instant;
  clearExpireAt?: boolean;
  customTags?: JsonObject;
}

export interface UpdateEntityOptions extends WriteOptions {
  name?: string;
  type?: string;
  into?: string;
  memoryIds?: string[];
}

export interface BatchDeleteOptions extends WriteOptions {
  memoryIds?: string[];
  scope?: Scope;
}

export interface SessionCloseOptions extends WriteOptions {
  appId?: string;
  promoteIds?: string[];
  pending?: boolean;
}

/** Where an item lives and what of it is embedded (docs/api.md#key-value-items). */
export interface ItemPutOptions extends WriteOptions {
  appId?: string;
  sessionId?: string;
  /** field paths to embed; `false`: not searchable by meaning; default the whole value */
  index?: false | string[];
}

export abstract class Writes extends Transport {
  /** Hand over conversation turns for extraction; answers at once with a task id
   * (`waitTask` waits for it). */
  add(userId: UserId, messages: Message[], options: AddOptions = {}): Promise<AddAccepted> {
    return this.write("add", options.requestId, {
      user_id: userId,
      app_id: options.appId,
      session_id: options.sessionId,
      level: options.level,
      ownership: options.ownership,
      messages,
      strategy: options.strategy,
    });
  }

  /** Write one memory as given (no extraction, no evolution); answers once durable. */
  addStructured(
    userId: UserId,
    content: string,
    options: AddStructuredOptions = {},
  ): Promise<StructuredAdded> {
    return this.write("add_structured", options.requestId, {
      user_id: userId,
      content,
      app_id: options.appId,
      session_id: options.sessionId,
      level: options.level,
      ownership: options.ownership,
      mem_type: options.memType,
      is_important: options.isImportant,
      expire_at: options.expireAt,
      custom_tags: options.customTags,
    });
  }

  /** Change content (re-embedded) and/or meta; give at least one of them. */
  update(userId: UserId, memoryId: string, options: UpdateOptions): Promise<Updated> {
    return this.write("update", options.requestId, {
      user_id: userId,
      memory_id: memoryId,
      content: options.content,
      is_important: options.isImportant,
      expire_at: options.expireAt,
      clear_expire_at: options.clearExpireAt,
      custom_tags: options.customTags,
    });
  }

  /** Correct how mentions were resolved: `rename` (`name`/`type`), `merge` (`into`) or
   * `split` (`memoryIds` leave for a new entity) (docs/api.md#entityupdate). */
  updateEntity(
    userId: UserId,
    entityId: string,
    op: "rename" | "merge" | "split",
    options: UpdateEntityOptions = {},
  ): Promise<EntityUpdated> {
    return this.write("entity/update", options.requestId, {
      user_id: userId,
      op,
      entity_id: entityId,
      name: options.name,
      type: options.type,
      into: options.into,
      memory_ids: options.memoryIds,
    });
  }

  /** Put the key-value item at `key` in `namespace` (`value` null: delete it); resolves
   * once durable (docs/api.md#key-value-items). */
  putItem(
    userId: UserId,
    namespace: string[],
    key: string,
    value: JsonObject | null,
    options: ItemPutOptions = {},
  ): Promise<ItemPut> {
    return this.write("items/put", options.requestId, {
      user_id: userId,
      app_id: options.appId,
      session_id: options.sessionId,
      namespace,
      key,
      value,
      index: options.index,
    });
  }

  /** Soft delete: out of recall when this resolves, purged after the retention. */
  delete(userId: UserId, memoryId: string, options: WriteOptions = {}): Promise<Deleted> {
    return this.write("delete", options.requestId, { user_id: userId, memory_id: memoryId });
  }

  /** Delete the named ids, or everything of a `scope` (`{}`: all the key may change);
   * exactly one of the two. */
  batchDelete(userId: UserId, options: BatchDeleteOptions): Promise<Deleted> {
    return this.write("batch_delete", options.requestId, {
      user_id: userId,
      memory_ids: options.memoryIds,
      scope: options.scope,
    });
  }

  /** The user id of `externalId` (your own string for a user) in the key's tenant,
   * created on first use (docs/api.md#usersresolve). Resolving again answers the same
   * id, so it is retried like a read. `{ create: false }` only looks it up: an unknown
   * external id throws the `ApiError` 40401 and creates nothing. */
  async resolveUser(externalId: string, options: { create?: boolean } = {}): Promise<UserId> {
    const found = await this.read<{ user_id: UserId; created: boolean }>("users/resolve", {
      external_id: externalId,
      create: options.create === false ? false : undefined,
    });
    return found.user_id;
  }

  /** Everything of the user (crypto-shredded, its external ids erased) or of a scope;
   * admin keys only. The user by id or as `{ externalId }`. */
  purge(user: UserRef, options: WriteOptions & { scope?: Scope } = {}): Promise<Purged> {
    return this.write("purge", options.requestId, { ...userFields(user), scope: options.scope });
  }

  /** Memory on or off for the user (no `appId`: globally, admin keys only) or one app.
   * Setting a value twice is harmless, so it is retried like a read. */
  switch(userId: UserId, enabled: boolean, options: { appId?: string } = {}): Promise<Switched> {
    return this.read("switch", { user_id: userId, app_id: options.appId, enabled });
  }

  /** Promote the session's valuable memories (and `promoteIds`), drop the rest;
   * `pending` keeps a 24 h continuity memory. */
  sessionClose(
    userId: UserId,
    sessionId: string,
    options: SessionCloseOptions = {},
  ): Promise<SessionClosed> {
    return this.write("session/close", options.requestId, {
      user_id: userId,
      session_id: sessionId,
      app_id: options.appId,
      promote_ids: options.promoteIds,
      pending: options.pending,
    });
  }

  /** Start an export of everything held about the user (admin keys only), by id or as
   * `{ externalId }`. Each call starts another, so it is retried on 429 (refused before
   * it ran) but not on 503. */
  export(user: UserRef): Promise<ExportStarted> {
    return this.run({
      method: "POST",
      path: `${V1}/export`,
      body: userFields(user),
      idempotent: false,
    });
  }
}
