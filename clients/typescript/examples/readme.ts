// The README's TypeScript example, as it stands there: `npm test` type-checks it against
// the built package (tests/integration/test_typescript_client.py holds the two equal).
import { MemstreamClient } from "@memstream/client";

const memory = MemstreamClient.fromEnv(); // MEMSTREAM_API_URL, MEMSTREAM_API_KEY
const task = await memory.add(42, [
  { role: "user", content: "I am allergic to peanuts.", msg_id: "m1" },
], { appId: "chat" });
await memory.waitTask(task.task_id); // a failed extraction throws

const found = await memory.recall(42, "what food should I avoid?", { appId: "chat", maxChars: 500 });
for (const m of found.memories) console.log(m.relevance.toFixed(2), m.content);
const context = await memory.context(42, { appId: "chat", query: "plan a dinner" });
console.log(context.text); // profile, memories and entities, ready for the prompt
