// The client against the real API (Kafka, Redis, chDB, Milvus Lite and the ingest flow),
// which tests/integration/test_typescript_client.py starts and names in the environment:
// MEMSTREAM_API_URL and MEMSTREAM_API_KEY (an app key of app "appA"),
// MEMSTREAM_TEST_ADMIN_KEY (an admin key), MEMSTREAM_TEST_LIMITED_URL (the same API with
// one recall a second per key and user). Without MEMSTREAM_API_URL these tests are skipped.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ApiError, MemstreamClient, MemstreamError, NO_RETRY } from "../dist/index.js";

const env = process.env;
const URL = env.MEMSTREAM_API_URL;
const APP = "appA";
let next = 0;
/** A user no other test (or run) uses. */
const newUser = () => Math.floor(Math.random() * 2 ** 40) * 2 ** 10 + ++next;
const memory = () => MemstreamClient.fromEnv();
const ids = (memories) => memories.map((m) => m.memory_id);

describe("against the real stack", { skip: !URL && "MEMSTREAM_API_URL is not set" }, () => {
  test("an add is extracted, then recalled; the same request_id is the same task", async () => {
    const client = memory();
    const user = newUser();
    const turns = [{ role: "user", content: "I am allergic to peanuts.", msg_id: "m1" }];
    const added = await client.add(user, turns, { appId: APP, requestId: `r-${user}` });
    assert.equal(added.accepted, true);
    const again = await client.add(user, turns, { appId: APP, requestId: `r-${user}` });
    assert.equal(again.task_id, added.task_id);

    const task = await client.waitTask(added.task_id, { timeoutMs: 20_000 });
    assert.equal(task.status, "done");
    assert.ok(task.counts.added >= 1 && task.memory_ids.length >= 1, JSON.stringify(task));
    assert.equal((await client.task(added.task_id)).status, "done");

    const found = await client.recall(user, "what food should I avoid?", { appId: APP });
    assert.equal(found.hit, true);
    const [first] = found.memories;
    assert.match(first.content, /peanuts/);
    assert.equal(first.source.msg_id, "m1");
    assert.ok(task.memory_ids.includes(first.memory_id));
    const budget = await client.recall(user, "peanuts", {
      appId: APP,
      maxChars: first.content.length,
      recordHit: false,
    });
    assert.equal(budget.max_chars, first.content.length);
    assert.equal(budget.chars_used, first.content.length);
    assert.deepEqual(ids(budget.memories), [first.memory_id]);
  });

  test("update, history, list, then a delete leaves recall", async () => {
    const client = memory();
    const user = newUser();
    const tea = await client.addStructured(user, "I like green tea", {
      appId: APP,
      customTags: { k: "v" },
    });
    const cello = await client.addStructured(user, "I play the cello every Sunday", { appId: APP });
    assert.match(tea.memory_id, /^m/);
    const up = await client.update(user, tea.memory_id, { content: "I like jasmine green tea", isImportant: true });
    assert.ok(up.updated.includes("content") && up.reembedded);
    const hist = await client.history(user, tea.memory_id);
    assert.equal(hist.memory.content, "I like jasmine green tea");
    assert.deepEqual(hist.memory.custom_tags, { k: "v" });
    assert.equal(hist.memory.user_id, user);
    assert.ok(hist.changes.some((c) => c.op_type === "UPDATE"));
    const listed = await client.list(user);
    const listedIds = ids(listed.memories.APP[APP]); // and any memory derived from them
    assert.ok(listedIds.includes(tea.memory_id) && listedIds.includes(cello.memory_id), listedIds);

    const before = await client.recall(user, "cello on Sunday", { appId: APP, minRelevance: 0 });
    assert.ok(ids(before.memories).includes(cello.memory_id));
    const gone = await client.delete(user, cello.memory_id);
    assert.equal(gone.deleted, 1);
    assert.deepEqual(gone.memory_ids, [cello.memory_id]);
    const after = await client.recall(user, "cello on Sunday", { appId: APP, minRelevance: 0 });
    assert.ok(!ids(after.memories).includes(cello.memory_id));
  });

  test("errors carry the API's code, message, trace id and HTTP status", async () => {
    const client = memory();
    const user = newUser();
    await assert.rejects(client.history(user, "m_missing"), (err) => {
      assert.ok(err instanceof ApiError && err instanceof MemstreamError);
      assert.equal(err.code, 40401);
      assert.equal(err.httpStatus, 404);
      assert.ok(err.traceId);
      return true;
    });
    await assert.rejects(client.delete(user, "m_missing", { requestId: `del-${user}` }), (err) => {
      assert.equal(err.code, 40401);
      assert.equal(err.requestId, `del-${user}`); // the key to resend the write with
      return true;
    });
    await assert.rejects(client.task("t_unknown"), (err) => err.code === 40401);
    await assert.rejects(client.recall(user, "tea", { topK: 0 }), (err) => {
      assert.equal(err.code, 40001);
      assert.match(err.msg, /top_k/);
      return true;
    });
    await assert.rejects(client.update(user, "m_x", {}), (err) => err.code === 40001);
    const stranger = new MemstreamClient(URL, { apiKey: "msk_not_a_key" });
    await assert.rejects(stranger.recall(user, "tea"), (err) => err.code === 40101 && err.httpStatus === 401);
    await assert.rejects(client.entities(user, { appId: "appB" }), (err) => err.code === 40101);
  });

  test("entities, an entity, the profile and the context answer", async () => {
    const client = memory();
    const user = newUser();
    const lyon = await client.addStructured(user, "My sister Anna lives in Lyon.", { appId: APP });
    const chess = await client.addStructured(user, "Every Sunday Anna plays chess with me.", { appId: APP });

    const page = await client.entities(user, { appId: APP });
    assert.deepEqual(page.entities.map((e) => e.name), ["Anna", "Lyon"]);
    assert.equal(page.entities[0].memories, 2);
    const anna = await client.entity(user, { name: "anna" });
    assert.equal(anna.entity.entity_id, page.entities[0].entity_id);
    assert.deepEqual(ids(anna.memories), [lyon.memory_id, chess.memory_id]);
    assert.ok(anna.summary.length >= 1);
    await assert.rejects(client.entity(user, { name: "Bob" }), (err) => err.code === 40401);

    const profile = await client.profile(user, { appId: APP, maxChars: 500 });
    assert.ok(profile.items.length >= 1, JSON.stringify(profile));
    assert.ok(profile.chars_used <= 500);
    const cited = new Set(profile.items.flatMap((i) => i.memory_ids));
    assert.ok([...cited].every((id) => id === lyon.memory_id || id === chess.memory_id));

    const chat = [
      { role: "system", content: "You are a helpful assistant." },
      { role: "tool", content: "ignored" },
      { role: "user", content: "Where does Anna live?" },
    ];
    const context = await client.context(user, { appId: APP, messages: chat, maxChars: 1000 });
    assert.match(context.text, /Lyon/);
    assert.equal(context.chars_used, context.text.length);
    assert.ok(context.items.some((i) => i.memory_ids.includes(lyon.memory_id)), JSON.stringify(context));
  });

  test("the change log, a session's close, a switch, entity corrections and a batch delete", async () => {
    const client = memory();
    const user = newUser();
    const tea = await client.addStructured(user, "I like green tea", { appId: APP });
    const trip = await client.addStructured(user, "We plan a trip to Kyoto", {
      appId: APP,
      level: "SESSION",
      sessionId: "s1",
    });
    await client.update(user, tea.memory_id, { content: "I like jasmine tea" });
    const log = await client.changeLog(user, { appId: APP, opTypes: ["UPDATE"] });
    assert.ok(log.items.every((c) => c.op_type === "UPDATE"));
    assert.ok(log.items.some((c) => c.memory_id === tea.memory_id && c.content_after === "I like jasmine tea"));

    const closed = await client.sessionClose(user, "s1", { appId: APP, promoteIds: [trip.memory_id] });
    assert.ok(closed.promoted.length >= 1, JSON.stringify(closed));

    assert.equal((await client.switch(user, false, { appId: APP })).enabled, false);
    await assert.rejects(client.addStructured(user, "I like chess", { appId: APP }), (err) => err.code === 40301);
    assert.equal((await client.switch(user, true, { appId: APP })).enabled, true);

    const lyon = await client.addStructured(user, "My sister Anna lives in Lyon.", { appId: APP });
    const anna = (await client.entity(user, { name: "Anna" })).entity;
    const renamed = await client.updateEntity(user, anna.entity_id, "rename", { name: "Anna Smith" });
    assert.equal(renamed.name, "Anna Smith");
    assert.deepEqual(renamed.memory_ids, [lyon.memory_id]);
    await assert.rejects(client.updateEntity(user, "e_nobody", "rename", { name: "X" }), (err) => err.code === 40401);

    const batch = await client.batchDelete(user, { memoryIds: [tea.memory_id, "m_missing"] });
    assert.equal(batch.deleted, 1);
    assert.deepEqual(batch.not_found, ["m_missing"]);
  });

  test("every option is a field the API knows (it refuses unknown ones, 40001)", async () => {
    const client = memory();
    const user = newUser();
    const later = new Date(Date.now() + 86_400_000);
    const added = await client.addStructured(user, "My sister Anna keeps bees.", {
      appId: APP,
      level: "APP",
      ownership: "USER",
      memType: "SEMANTIC",
      isImportant: true,
      expireAt: later,
      customTags: { topic: "family" },
      requestId: `all-${user}`,
    });
    await client.update(user, added.memory_id, { clearExpireAt: true, customTags: { topic: "bees" } });
    const found = await client.recall(user, "Anna's bees", {
      appId: APP,
      includeGlobal: true,
      crossApp: false,
      ownership: ["USER"],
      memType: ["SEMANTIC"],
      customTags: ["topic"],
      topK: 5,
      minRelevance: 0,
      includeArchived: false,
      timeoutMs: 5000,
      asOf: later,
      entities: ["Anna"],
      maxChars: 1000,
      recordHit: false,
    });
    assert.deepEqual(ids(found.memories), [added.memory_id]);
    const since = new Date(Date.now() - 3_600_000);
    const log = await client.changeLog(user, { appId: APP, level: "APP", start: since, end: later, page: 1, pageSize: 10 });
    assert.ok(log.total >= 2);
    assert.equal((await client.userList(user, { includeDeleted: true, page: 1, pageSize: 10 })).page_size, 10);
    const people = await client.entities(user, { appId: APP, includeGlobal: false, type: "person", page: 1, pageSize: 5 });
    assert.deepEqual(people.entities.map((e) => e.name), ["Anna"]);
    const anna = await client.entity(user, { entityId: people.entities[0].entity_id, appId: APP, maxChars: 200 });
    assert.equal(anna.entity.name, "Anna");
    const profile = await client.profile(user, { appId: APP, includeGlobal: true, entity: "Anna", maxChars: 300 });
    assert.ok(profile.items.every((i) => i.memory_ids.includes(added.memory_id)));
    const context = await client.context(user, { appId: APP, query: "bees", maxChars: 300, countHit: false });
    assert.match(context.text, /bees/);
    const turn = [{ role: "user", content: "Anna?", name: "Lin", msg_id: "m1", ts: later }];
    const task = await client.add(user, turn, {
      appId: APP,
      sessionId: "s9",
      level: "SESSION",
      ownership: "USER",
      strategy: { focus: "family", evolution: "append", tags: { src: "ts" }, entity_types: ["person"] },
    });
    assert.equal(task.accepted, true);
  });

  test("a user id beyond 2^53 is sent and read back exactly", async () => {
    const client = memory();
    const user = 2n ** 63n + BigInt(newUser());
    const added = await client.addStructured(user, "I keep bees on the roof.", { appId: APP });
    const hist = await client.history(user, added.memory_id);
    assert.equal(hist.memory.user_id, user);
    const found = await client.recall(user, "bees", { appId: APP });
    assert.deepEqual(ids(found.memories), [added.memory_id]);
  });

  test("a 42910 of the real rate limiter is waited out and retried", { skip: !env.MEMSTREAM_TEST_LIMITED_URL }, async () => {
    const limited = env.MEMSTREAM_TEST_LIMITED_URL;
    const user = newUser();
    const once = new MemstreamClient(limited, { apiKey: env.MEMSTREAM_API_KEY, retry: NO_RETRY });
    await once.recall(user, "tea", { appId: APP });
    await assert.rejects(once.recall(user, "tea", { appId: APP }), (err) => {
      assert.equal(err.code, 42910);
      assert.equal(err.httpStatus, 429);
      assert.ok(err.retryAfterS > 0);
      return true;
    });
    const patient = new MemstreamClient(limited, { apiKey: env.MEMSTREAM_API_KEY });
    assert.equal((await patient.recall(user, "tea", { appId: APP })).hit, false);
  });

  test("an admin key exports and purges", { skip: !env.MEMSTREAM_TEST_ADMIN_KEY }, async () => {
    const admin = new MemstreamClient(URL, { apiKey: env.MEMSTREAM_TEST_ADMIN_KEY });
    const user = newUser();
    await memory().addStructured(user, "I like chess", { appId: APP });
    const started = await admin.export(user);
    const done = await admin.waitExport(started.export_id, { timeoutMs: 20_000 });
    assert.equal(done.status, "done");
    const lines = await admin.downloadExport(done.url);
    assert.ok(lines.some((l) => l.type === "memory"));
    const purged = await admin.purge(user);
    assert.ok(purged.crypto_shredded && purged.deleted >= 1);
    assert.equal((await admin.userList(user)).total, 0);
  });

  test("key-value items: put, get, search, namespaces, delete", async () => {
    const client = memory();
    const user = newUser();
    const value = { b: null, a: [1, { c: null }], text: "likes jazz on vinyl" };
    const put = await client.putItem(user, ["prefs", "music"], "jazz", value, { appId: APP });
    assert.equal(put.op, "put");
    assert.match(put.memory_id, /^i_/);
    const item = await client.getItem(user, ["prefs", "music"], "jazz", { appId: APP });
    assert.deepEqual(item.value, value);
    assert.deepEqual(Object.keys(item.value), ["b", "a", "text"]);
    assert.equal(await client.getItem(user, ["prefs"], "absent", { appId: APP }), null);
    await client.putItem(user, ["prefs", "food"], "tea", { n: 3 }, { appId: APP, index: false });
    const ranked = await client.searchItems(user, { appId: APP, query: "jazz records" });
    assert.equal(ranked.items[0].key, "jazz");
    assert.equal(typeof ranked.items[0].score, "number");
    const filtered = await client.searchItems(user, { appId: APP, filter: { n: { $gt: 2 } } });
    assert.deepEqual(filtered.items.map((i) => i.key), ["tea"]);
    const names = await client.listItemNamespaces(user, { appId: APP, prefix: ["prefs"] });
    assert.deepEqual(names.namespaces, [["prefs", "food"], ["prefs", "music"]]);
    // subtree: the scope named and those beneath it (here the app's session)
    await client.putItem(user, ["trips"], "kyoto", { text: "plans Kyoto" }, { appId: APP, sessionId: "s1" });
    const appOnly = await client.searchItems(user, { appId: APP });
    assert.deepEqual(appOnly.items.map((i) => i.key).sort(), ["jazz", "tea"]);
    const below = await client.searchItems(user, { subtree: true });
    assert.deepEqual(below.items.map((i) => i.key).sort(), ["jazz", "kyoto", "tea"]);
    const kyoto = below.items.find((i) => i.key === "kyoto");
    assert.deepEqual([kyoto.app_id, kyoto.session_id], [APP, "s1"]);
    const allNames = await client.listItemNamespaces(user, { appId: APP, subtree: true });
    assert.deepEqual(allNames.namespaces, [["prefs", "food"], ["prefs", "music"], ["trips"]]);
    const gone = await client.putItem(user, ["prefs", "music"], "jazz", null, { appId: APP });
    assert.equal(gone.op, "delete");
    assert.equal(await client.getItem(user, ["prefs", "music"], "jazz", { appId: APP }), null);
    await assert.rejects(client.putItem(user, ["a.b"], "k", {}, { appId: APP }), (err) => err.code === 40001);
  });

  test("an external id resolves to one user; export and purge take it", { skip: !env.MEMSTREAM_TEST_ADMIN_KEY }, async () => {
    const admin = new MemstreamClient(URL, { apiKey: env.MEMSTREAM_TEST_ADMIN_KEY });
    const externalId = `ts-${Date.now()}-${newUser()}`;
    const user = await memory().resolveUser(externalId);
    assert.ok(typeof user === "bigint" || user > 0);
    assert.equal(await admin.resolveUser(externalId), user); // the same, from any key
    assert.equal(await memory().resolveUser(externalId, { create: false }), user);
    const unknown = `ts-unknown-${newUser()}`;
    await assert.rejects(memory().resolveUser(unknown, { create: false }), (err) => err.code === 40401);
    await assert.rejects(memory().resolveUser(unknown, { create: false }), (err) => err.code === 40401);
    await memory().addStructured(user, "I like go", { appId: APP });
    const started = await admin.export({ externalId });
    const done = await admin.waitExport(started.export_id, { timeoutMs: 20_000 });
    assert.equal(done.status, "done");
    const purged = await admin.purge({ externalId });
    assert.ok(purged.crypto_shredded && purged.deleted >= 1);
    assert.notEqual(await admin.resolveUser(externalId), user); // now a new user
    await assert.rejects(admin.export({ externalId: `nobody-${newUser()}` }), (err) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 40401);
      return true;
    });
    await assert.rejects(memory().resolveUser(""), (err) => err.code === 40001);
  });
});
