// Retries, idempotency keys, headers and error mapping of the client (src/transport.ts),
// against a tiny scripted HTTP server: it answers each request with the next reply of
// its script (a 50301 once, a 42910 with Retry-After, a dropped connection, ...), which
// the real API cannot be made to do on cue. The real API: stack.test.mjs.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import {
  ApiError,
  MemstreamClient,
  MemstreamError,
  NO_RETRY,
  ProtocolError,
  TaskPending,
  TransportError,
  stringifyJson,
} from "../dist/index.js";

/** The requests the server saw and the replies it has left to give. */
const seen = [];
let script = [];
let server;
let url;

const ok = (data) => ({ status: 200, body: { code: 0, msg: "ok", data } });
const refuse = (code, status, extra = {}) => ({
  status,
  body: { code, msg: `refused ${code}`, trace_id: "tr-1", data: extra.data ?? null },
  headers: extra.headers ?? {},
});

before(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, raw });
      const reply = script.shift() ?? ok({});
      if (reply === "drop") return req.socket.destroy();
      const text = typeof reply.body === "string" ? reply.body : stringifyJson(reply.body);
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

function client(options = {}) {
  seen.length = 0;
  return new MemstreamClient(url, { apiKey: "msk_test", retry: { backoffMs: 10 }, ...options });
}

const bodies = () => seen.map((r) => JSON.parse(r.raw));

test("a 50301 on a write is sent again with the same request_id", async () => {
  const memory = client();
  script = [refuse(50301, 503, { headers: { "retry-after": "0" } }), ok({ memory_id: "m_1", duplicate: false })];
  const added = await memory.addStructured(7, "I like tea", { appId: "chat" });
  assert.equal(added.memory_id, "m_1");
  const [first, second] = bodies();
  assert.equal(seen.length, 2);
  assert.match(first.request_id, /^c_[0-9a-f]{32}$/);
  assert.equal(second.request_id, first.request_id);
  assert.deepEqual(first, { user_id: 7, content: "I like tea", app_id: "chat", request_id: first.request_id });
});

test("a caller's request_id is the one sent, on every attempt and on the error", async () => {
  const memory = client({ retry: { maxAttempts: 3, backoffMs: 5 } });
  script = [refuse(50301, 503), refuse(50301, 503), refuse(50301, 503)];
  await assert.rejects(memory.delete(7, "m_1", { requestId: "del-7" }), (err) => {
    assert.ok(err instanceof ApiError && err instanceof MemstreamError);
    assert.equal(err.code, 50301);
    assert.equal(err.httpStatus, 503);
    assert.equal(err.traceId, "tr-1");
    assert.equal(err.requestId, "del-7");
    return true;
  });
  assert.deepEqual(bodies().map((b) => b.request_id), ["del-7", "del-7", "del-7"]); // maxAttempts
});

test("42910 waits at least Retry-After, then succeeds", async () => {
  const memory = client();
  script = [refuse(42910, 429, { headers: { "retry-after": "0.3" } }), ok({ hit: false, memories: [] })];
  const started = Date.now();
  const found = await memory.recall(7, "tea");
  assert.equal(found.hit, false);
  assert.ok(Date.now() - started >= 290, `waited ${Date.now() - started} ms`);
  assert.equal(seen.length, 2);
});

test("a 4xx is not retried and carries the API's code", async () => {
  const memory = client();
  script = [refuse(40001, 400)];
  await assert.rejects(memory.recall(7, "tea", { topK: 0 }), (err) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 40001);
    assert.equal(err.msg, "refused 40001");
    assert.equal(err.requestId, null); // a read has none
    return true;
  });
  assert.equal(seen.length, 1);
});

test("starting an export is not resent after a 50301 (each call starts another)", async () => {
  const memory = client();
  script = [refuse(50301, 503)];
  await assert.rejects(memory.export(7), (err) => err instanceof ApiError && err.code === 50301);
  assert.equal(seen.length, 1);
});

test("a dropped connection: a write is resent with its key, an export is not", async () => {
  const memory = client();
  script = ["drop", ok({ task_id: "t_1", accepted: true })];
  const added = await memory.add(7, [{ role: "user", content: "hi" }]);
  assert.equal(added.task_id, "t_1");
  const [first, second] = bodies();
  assert.equal(second.request_id, first.request_id);

  seen.length = 0;
  script = ["drop"];
  await assert.rejects(memory.export(7), (err) => {
    assert.ok(err instanceof TransportError && err.name === "TransportError");
    assert.equal(err.code, null);
    assert.equal(err.nothingSent, false); // the request went out: it may have started one
    return true;
  });
  assert.equal(seen.length, 1);
});

test("no server at all: a TransportError after the attempts", async () => {
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  const memory = new MemstreamClient(`http://127.0.0.1:${port}`, { retry: { maxAttempts: 2, backoffMs: 5 } });
  await assert.rejects(memory.addStructured(7, "x", { requestId: "r-1" }), (err) => {
    assert.ok(err instanceof TransportError);
    assert.equal(err.requestId, "r-1");
    assert.equal(err.nothingSent, true);
    assert.match(err.message, /ECONNREFUSED/);
    return true;
  });
});

test("an answer that is not an envelope is a ProtocolError", async () => {
  const memory = client({ retry: NO_RETRY });
  script = [{ status: 502, body: "<html>bad gateway</html>" }];
  await assert.rejects(memory.history(7, "m_1"), (err) => {
    assert.ok(err instanceof ProtocolError);
    assert.equal(err.httpStatus, 502);
    return true;
  });
});

test("headers: the key, the user to route by, JSON", async () => {
  const memory = client();
  script = [ok({ hit: false, memories: [] })];
  await memory.recall(2n ** 64n - 1n, "tea", { appId: "chat", maxChars: 300, crossApp: true });
  const [req] = seen;
  assert.equal(req.headers["authorization"], "Bearer msk_test");
  assert.equal(req.headers["x-memstream-user"], "18446744073709551615");
  assert.equal(req.headers["content-type"], "application/json");
  assert.match(req.headers["user-agent"], /^memstream-client-ts\//);
  assert.ok(req.raw.startsWith('{"user_id":18446744073709551615,'), req.raw);
  assert.deepEqual(JSON.parse(req.raw.replace(/18446744073709551615/, "1")), {
    user_id: 1,
    query: "tea",
    scope: { app_id: "chat", cross_app: { enabled: true } },
    filter: {},
    max_chars: 300,
  });
});

test("waitTask polls until done; a failed task throws its code; a slow one TaskPending", async () => {
  const memory = client();
  const task = (status, extra = {}) => ok({ task_id: "t_9", status, ...extra });
  script = [task("accepted"), task("processing"), task("done", { user_id: 2n ** 63n })];
  const done = await memory.waitTask("t_9", { everyMs: 10 });
  assert.equal(done.status, "done");
  assert.equal(done.user_id, 2n ** 63n); // an id beyond 2^53 is read exactly
  assert.deepEqual(seen.map((r) => `${r.method} ${r.url}`), Array(3).fill("GET /memory/v1/tasks/t_9"));

  script = [task("failed", { code: 50001, reason: "malformed output" })];
  await assert.rejects(memory.waitTask("t_9"), (err) => err instanceof ApiError && err.code === 50001);

  script = Array(100).fill(task("processing"));
  await assert.rejects(
    memory.waitTask("t_9", { timeoutMs: 100, everyMs: 20 }),
    (err) => err instanceof TaskPending && err.taskId === "t_9" && err.status === "processing",
  );
  script = [];
});

test("a base URL that is not http(s) is refused at once", () => {
  for (const bad of ["localhost:8000", "", "ftp://host", "http://"]) {
    assert.throws(() => new MemstreamClient(bad), MemstreamError, bad);
  }
  assert.equal(new MemstreamClient("http://127.0.0.1:8000/").baseUrl, "http://127.0.0.1:8000");
});
