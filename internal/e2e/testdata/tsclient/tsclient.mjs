// tsclient.mjs plays an MCP host built on the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json): it launches
// `remotemcp --data-dir DIR ARGS...` over stdio and drives it. It prints
// one JSON line per check to stdout, with what it saw; the Go test
// (internal/e2e/tsclient_test.go) asserts them. It asserts nothing itself.
//
// usage: node tsclient.mjs BIN DATA-DIR PREFIX [ARGS...]
//   PREFIX is the prefix of the offered names ("fx__", or "" for --server).
//
// Conversation with the test: after {"check":"await-change"} it waits for
// one line on stdin, written once the test changed the backend's catalog.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { createInterface } from "node:readline";

const [bin, dataDir, prefix, ...args] = process.argv.slice(2);
if (!bin || !dataDir || prefix === undefined) {
  console.error("usage: node tsclient.mjs BIN DATA-DIR PREFIX [ARGS...]");
  process.exit(2);
}

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const errText = (e) => (e && e.message) || String(e);
const texts = (res) =>
  (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Lines the test writes to our stdin, one per awaited event.
const stdinLines = [];
let stdinWaiter = null;
createInterface({ input: process.stdin }).on("line", (l) => {
  stdinLines.push(l);
  if (stdinWaiter) stdinWaiter();
});
async function nextStdinLine() {
  while (stdinLines.length === 0) await new Promise((r) => (stdinWaiter = r));
  stdinWaiter = null;
  return stdinLines.shift();
}

// check runs one step and prints its result, or the error it ended with.
async function check(name, fn) {
  try {
    out({ check: name, ...(await fn()) });
  } catch (e) {
    out({ check: name, error: errText(e) });
  }
}

const client = new Client(
  { name: "ts-test-host", version: "1" },
  // A host that can answer a server's questions (form mode).
  { capabilities: { elicitation: { form: {} } } },
);

const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({
    message: req.params.message,
    mode: req.params.mode,
    properties: Object.keys(req.params.requestedSchema?.properties || {}),
  });
  return { action: "accept", content: { name: "Ada", age: 7 } };
});

let listChanged = 0;
let onListChanged = null;
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  listChanged++;
  if (onListChanged) onListChanged();
});

const updates = [];
let onUpdate = null;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
  updates.push(n.params.uri);
  if (onUpdate) onUpdate();
});

const transport = new StdioClientTransport({
  command: bin,
  args: ["--data-dir", dataDir, ...args],
  env: process.env, // REMOTEMCP_HOME etc. from the test
  stderr: "inherit",
});

// wire is what the transport handed the SDK, in arrival order, while
// tapping: the SDK dispatches notifications a microtask later than
// responses, so its onprogress can miss a progress notification that
// arrived right before the response (typescript-sdk issue #2580). The
// wire order is what remotemcp controls.
let wire = null;
const sdkErrors = [];
client.onerror = (e) => sdkErrors.push(errText(e));

await check("connect", async () => {
  await client.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (m, extra) => {
    if (wire) {
      if (m.method === "notifications/progress") {
        wire.push({ kind: "progress", token: m.params.progressToken, progress: m.params.progress });
      } else if (m.id !== undefined && m.method === undefined) {
        wire.push({ kind: "response", id: m.id });
      }
    }
    deliver(m, extra);
  };
  return {
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  };
});

await check("list-tools", async () => {
  const tl = await client.listTools();
  return { names: tl.tools.map((t) => t.name) };
});

await check("call-echo", async () => {
  const res = await client.callTool({ name: prefix + "echo", arguments: { text: "hi" } });
  return { text: texts(res), isError: !!res.isError };
});

await check("call-add", async () => {
  const res = await client.callTool({ name: prefix + "add", arguments: { a: 1, b: 2 } });
  return { text: texts(res), structured: res.structuredContent, isError: !!res.isError };
});

// Progress: the callback gets the server's notifications for this call.
await check("progress", async () => {
  const seen = [];
  wire = [];
  const errorsBefore = sdkErrors.length;
  const res = await client.callTool(
    { name: prefix + "slow", arguments: { ms: 300, steps: 3 } },
    CallToolResultSchema,
    { onprogress: (p) => seen.push(p) },
  );
  await sleep(50); // let late-dispatched notifications run
  const w = wire;
  wire = null;
  return { text: texts(res), progress: seen, wire: w, sdkErrors: sdkErrors.slice(errorsBefore) };
});

// Cancellation: aborting sends notifications/cancelled.
await check("cancel", async () => {
  const ac = new AbortController();
  const started = Date.now();
  const call = client.callTool(
    { name: prefix + "slow", arguments: { ms: 30000 } },
    CallToolResultSchema,
    { signal: ac.signal },
  );
  await sleep(700);
  ac.abort("the host cancelled");
  try {
    const res = await call;
    return { rejected: false, text: texts(res) };
  } catch (e) {
    return { rejected: true, reason: errText(e), ms: Date.now() - started };
  }
});

// A server's question, answered by the elicitation handler above.
await check("ask", async () => {
  const res = await client.callTool({ name: prefix + "ask", arguments: {} });
  return { text: texts(res), isError: !!res.isError, asked };
});

// list_changed after the test changes the backend's catalog.
await check("list-changed", async () => {
  const before = listChanged;
  const arrived = new Promise((r) => (onListChanged = r));
  out({ check: "await-change" });
  await nextStdinLine();
  let timer;
  const got = await Promise.race([
    arrived.then(() => true),
    new Promise((r) => (timer = setTimeout(() => r(false), 20000))),
  ]);
  clearTimeout(timer);
  onListChanged = null;
  // The catalog may lag the notification by a moment: list until it shows.
  let names = [];
  for (let i = 0; i < 100; i++) {
    names = (await client.listTools()).tools.map((t) => t.name);
    if (names.includes(prefix + "fresh")) break;
    await sleep(100);
  }
  let fresh = null;
  if (names.includes(prefix + "fresh")) {
    fresh = texts(await client.callTool({ name: prefix + "fresh", arguments: {} }));
  }
  return { notified: got, count: listChanged - before, names, fresh };
});

await check("read-resource", async () => {
  const rr = await client.readResource({ uri: "test://readme" });
  return { contents: rr.contents };
});

await check("read-template", async () => {
  const rr = await client.readResource({ uri: "test://items/5" });
  return { contents: rr.contents };
});

// A subscribed resource's update (resources/subscribe, then the test
// makes the backend send notifications/resources/updated).
await check("subscribe", async () => {
  await client.subscribeResource({ uri: "test://readme" });
  const arrived = new Promise((r) => (onUpdate = r));
  out({ check: "await-update" });
  await nextStdinLine();
  let timer;
  const got = await Promise.race([
    arrived.then(() => true),
    new Promise((r) => (timer = setTimeout(() => r(false), 20000))),
  ]);
  clearTimeout(timer);
  onUpdate = null;
  await client.unsubscribeResource({ uri: "test://readme" });
  return { notified: got, names: updates };
});

await check("list-prompts", async () => {
  const pl = await client.listPrompts();
  return { names: pl.prompts.map((p) => p.name) };
});

await check("get-prompt", async () => {
  const pr = await client.getPrompt({ name: prefix + "greet", arguments: { name: "Bob" } });
  return { messages: pr.messages };
});

await check("close", async () => {
  await client.close();
  return {};
});
out({ check: "done" });
process.exit(0);
