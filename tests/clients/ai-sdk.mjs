// The AI SDK's MCP client (@ai-sdk/mcp, createMCPClient) over its HTTP transport and its stdio transport, in its
// default mode (server/discover first: 2026-07-28 where the server speaks it) and with discovery off: tools()
// and each tool's execute (a tool error is a result with isError, which execute returns rather than throws), and
// readResource. Then one generateText run of the ai package with its mock language model (no model is called):
// the model asks for the calls, and the prompt of its second step, the tool results as the AI SDK gives them to
// any provider, must hold each result's JSON text as text, and the tool error's text.
import { createMCPClient } from "@ai-sdk/mcp";
import { Experimental_StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { check, linkCases, matrix, run } from "./lib.mjs";

// discovery: the client's default (probe with server/discover, 2026-07-28, and fall back to initialize) or false
// (initialize, 2025-11-25). The era it settled on is its protocolEra ("modern" or "legacy"), which it does not
// document: read here to say which era each case ran in.
async function adapter(server, transport, discovery, http) {
  const mcp = await createMCPClient({ transport, name: "goalbox-matrix-ai-sdk", protocolVersionDiscovery: discovery });
  if (!discovery) check(mcp.protocolEra === "legacy", `with discovery off the era is ${mcp.protocolEra}`);
  else {
    check(mcp.protocolEra === "modern" && mcp.protocolVersion === "2026-07-28",
      `the era over ${http ? "HTTP" : "stdio"} is ${mcp.protocolEra} ${mcp.protocolVersion}`);
  }
  const tools = await mcp.tools();
  return {
    server,
    aiTools: tools,
    tools: async () => Object.keys(tools).map((name) => ({ name })),
    async call(name, args) {
      const res = await tools[name].execute(args, { toolCallId: `c-${name}`, messages: [] });
      const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
      return { error: res.isError === true, text };
    },
    async read(uri) {
      const c = (await mcp.readResource({ uri })).contents[0];
      return { text: c.text, meta: c._meta };
    },
    protocolVersion: () => mcp.protocolVersion,
    close: () => mcp.close(),
  };
}

const modelCalls = {
  filesystem: [
    { name: "sandbox_write_file", args: { path: "a.txt", content: "héllo \"quoted\"\n" }, want: '"bytes_written":16' },
    { name: "sandbox_read_file", args: { path: "../outside.txt" }, want: "outside the workspace", error: true },
  ],
  executor: [
    { name: "sandbox_run_command", args: { command: "printf 'a\\tb \"c\"\\n'" }, want: '"stdout":"a\\tb \\"c\\"\\n"' },
    { name: "sandbox_run_command", args: { command: "true", cwd: ".." }, want: "outside the workspace", error: true },
  ],
  links: [{ name: "sandbox_run_command", args: { command: "seq 1 100000" }, want: '"stdout_truncated":true', link: true }],
};

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

async function afterCalls(conn, listed, kase) {
  const calls = modelCalls[kase.scenario ?? conn.server];
  const model = new MockLanguageModelV4({
    doGenerate: [
      {
        content: calls.map((c, i) => ({ type: "tool-call", toolCallId: `call_${i}`, toolName: c.name, input: JSON.stringify(c.args) })),
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage,
        warnings: [],
      },
      { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] },
    ],
  });
  const result = await generateText({ model, tools: conn.aiTools, prompt: "go", stopWhen: stepCountIs(3) });
  check(result.text === "ok", `the run did not end: ${result.text}`);
  check(model.doGenerateCalls.length === 2, `${model.doGenerateCalls.length} model calls`);
  const prompt = model.doGenerateCalls[1].prompt;
  const parts = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content).filter((p) => p.type === "tool-result");
  for (const [i, c] of calls.entries()) {
    const p = parts.find((x) => x.toolCallId === `call_${i}`);
    check(p, `no tool result for ${c.name} in the prompt: ${JSON.stringify(prompt).slice(0, 800)}`);
    // The provider-neutral output: text, json, or content parts; every provider sends text parts as text.
    const o = p.output;
    // With -resource-links the link is a second part, given to the model as the link's JSON in a text part: the
    // JSON text stays the first part, as it is, and the URI reaches the model.
    if (c.link) {
      check(o.type === "content" && o.value.length === 2 && o.value[1].type === "text" && o.value[1].text.includes("goalbox-output://"),
        `${c.name}: the resource_link reaches the model as ${JSON.stringify(o.value.slice(1)).slice(0, 400)}`);
      o.value = o.value.slice(0, 1);
    }
    const text = o.type === "text" || o.type === "error-text" ? o.value
      : o.type === "content" ? o.value.filter((v) => v.type === "text").map((v) => v.text).join("\n")
      : JSON.stringify(o.value);
    check(text.includes(c.want) && !text.includes("[object Object]"), `${c.name}: the model is given ${JSON.stringify(o).slice(0, 600)}`);
    if (!c.error) {
      check(JSON.parse(text) !== null && !Array.isArray(JSON.parse(text)), `${c.name}: not the result's JSON text: ${text}`);
    }
  }
}

const cases = [];
for (const [era, discovery] of [["auto", true], ["2025-11-25", false]]) {
  const openHTTP = (server, http) => adapter(server, { type: "http", url: http.url, headers: http.headers }, discovery, true);
  const openStdio = (server, cmd) =>
    adapter(server, new Experimental_StdioMCPTransport({ ...cmd, stderr: "ignore" }), discovery, false);
  const eraCases = [...matrix(openHTTP, openStdio, { after: afterCalls })];
  if (discovery) eraCases.push(...linkCases(openHTTP, openStdio, afterCalls));
  for (const c of eraCases) cases.push({ ...c, name: `${era} ${c.name}` });
}
await run("ai-sdk", cases);
