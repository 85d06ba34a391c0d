// The README's TypeScript example (type-checked by `npm test` against the built package).
import { MemstreamClient, MemstreamError } from "@memstream/client";

const memory = MemstreamClient.fromEnv(); // MEMSTREAM_API_URL, MEMSTREAM_API_KEY
const task = await memory.add(42, [
  { role: "user", content: "I am allergic to peanuts.", msg_id: "m1" },
  { role: "assistant", content: "Noted, I will keep that in mind.", msg_id: "m2" },
], { appId: "chat" });
await memory.waitTask(task.task_id); // extraction runs in the ingest flow; a failure throws

// next turn: what should the model know before it answers?
const found = await memory.recall(42, "what food should I avoid?", { appId: "chat", maxChars: 500 });
for (const m of found.memories) console.log(m.relevance.toFixed(2), m.content);
const context = await memory.context(42, { appId: "chat", query: "plan a dinner" });
console.log(context.text); // profile, memories and entities, ready for the prompt
try {
  await memory.history(42, "m_missing");
} catch (err) {
  if (err instanceof MemstreamError) console.log(err.code, err.msg, err.traceId); // 40401 …
}
