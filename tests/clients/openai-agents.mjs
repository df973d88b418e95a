// The OpenAI Agents SDK for JavaScript (@openai/agents): MCPServerStreamableHttp and MCPServerStdio. The calls go
// through the SDK's MCPServer (callToolResult: isError arrives as the result's flag); then the tools are converted
// as an Agent converts them for a model call, with strict schemas, and every one must stay strict (the SDK falls
// back to a non-strict schema, with a warning, when it cannot make one strict: OpenAI strict mode would then be off
// for that tool). Last, one Agent run against a local stand-in for the Responses API shows what the model receives
// as the tool's output: the result's JSON text as it is, not a stringified array, and a tool error's text.
import {
  Agent,
  MCPServerStdio,
  MCPServerStreamableHttp,
  OpenAIResponsesModel,
  Runner,
  getAllMcpTools,
  setTracingDisabled,
} from "@openai/agents";
import OpenAI from "openai";
import { check, issue, linkCases, matrix, modelStub, run } from "./lib.mjs";

setTracingDisabled(true);

function adapter(server) {
  return {
    server,
    tools: () => server.listTools(),
    async call(name, args) {
      const res = await server.callToolResult(name, args);
      return { error: res.isError === true, text: res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n") };
    },
    async read(uri) {
      const c = (await server.readResource(uri)).contents[0];
      return { text: c.text, meta: c._meta };
    },
    // The SDK's MCP servers run the v2 client in auto mode; the version it settled on is its underlying client's.
    protocolVersion: () => (server.underlying ?? server).session?.getNegotiatedProtocolVersion?.(),
    close: () => server.close(),
  };
}

// A call the stand-in model asks for on each server, and one that must come back as a tool error.
const modelCalls = {
  filesystem: [
    { name: "sandbox_write_file", args: { path: "a.txt", content: "héllo \"quoted\"\n" }, want: (r) => r.bytes_written === 16 },
    { name: "sandbox_read_file", args: { path: "../outside.txt" }, error: "outside the workspace" },
  ],
  executor: [
    { name: "sandbox_run_command", args: { command: "printf 'a\\tb \"c\"\\n'" }, want: (r) => r.stdout === 'a\tb "c"\n' },
    { name: "sandbox_run_command", args: { command: "true", cwd: ".." }, error: "outside the workspace" },
  ],
  links: [
    { name: "sandbox_run_command", args: { command: "seq 1 100000" }, want: (r) => r.stdout_truncated === true },
  ],
};

async function afterCalls(conn, listed, kase) {
  const tools = await getAllMcpTools({ mcpServers: [conn.server], convertSchemasToStrict: true });
  check(tools.length === listed.length, `getAllMcpTools gave ${tools.length} tools, the server lists ${listed.length}`);
  const loose = tools.filter((t) => t.strict !== true).map((t) => t.name);
  check(loose.length === 0, `not strict after the SDK's conversion (OpenAI strict mode refuses their schema): ${loose.join(", ")}`);
  for (const t of tools) {
    const p = t.parameters;
    check(p.additionalProperties === false, `${t.name}: strict parameters allow additional properties`);
    const props = Object.keys(p.properties ?? {}).sort();
    check(JSON.stringify([...(p.required ?? [])].sort()) === JSON.stringify(props), `${t.name}: strict parameters must require every property: ${JSON.stringify(p)}`);
  }

  // The Agent run: the stand-in asks for the calls, then ends; its last request carries every function_call_output.
  const calls = modelCalls[kase.scenario ?? conn.server.name];
  const stub = await modelStub([
    calls.map((c, i) => ({ type: "function_call", id: `fc_${i}`, call_id: `call_${i}`, name: c.name, arguments: JSON.stringify(c.args), status: "completed" })),
  ]);
  const model = new OpenAIResponsesModel(new OpenAI({ baseURL: stub.url, apiKey: "stub" }), "gpt-stub");
  const agent = new Agent({ name: "matrix", instructions: "use the tools", model, tools });
  const result = await new Runner({ tracingDisabled: true }).run(agent, "go", { maxTurns: 3 });
  check(result.finalOutput === "ok", `the run did not end: ${result.finalOutput}`);
  // The tools as the request carries them to the model: every one a strict function.
  const sent = stub.bodies[0].body.tools ?? [];
  check(sent.length === tools.length, `the request carries ${sent.length} tools of ${tools.length}`);
  const notStrict = sent.filter((t) => t.type !== "function" || t.strict !== true || t.parameters?.additionalProperties !== false);
  check(notStrict.length === 0, `tools sent without strict mode: ${notStrict.map((t) => t.name).join(", ")}`);
  const last = stub.bodies.at(-1).body;
  for (const [i, c] of calls.entries()) {
    const item = last.input.find((x) => x.type === "function_call_output" && x.call_id === `call_${i}`);
    check(item, `no function_call_output for ${c.name} in the request: ${JSON.stringify(last.input).slice(0, 600)}`);
    // The Responses API takes a string or a list of input items; either way the model must read the text itself.
    const text = typeof item.output === "string" ? item.output
      : item.output.filter((o) => o.type === "input_text").map((o) => o.text).join("\n");
    if (c.error) {
      check(text.includes(c.error), `${c.name}: the model receives ${JSON.stringify(item.output)}, not the tool error`);
      continue;
    }
    let r;
    try {
      r = JSON.parse(text);
    } catch {
      throw new Error(`${c.name}: the model receives ${JSON.stringify(item.output)}, not the result's JSON text`);
    }
    // A result of several content items (the JSON text and a resource_link, with -resource-links) is sent as the
    // JSON of the item list: the result's JSON text escaped a second time inside it.
    const where = `${c.name}: the model receives ${text.slice(0, 600)}`;
    if (kase.scenario) issue("links-stringified-array", Array.isArray(r), where);
    else check(!Array.isArray(r), where);
    if (!Array.isArray(r)) check(c.want(r), where);
  }
  stub.close();
}

async function openHTTP(server, http) {
  const s = new MCPServerStreamableHttp({ name: server, url: http.url, requestInit: { headers: http.headers } });
  await s.connect();
  return adapter(s);
}
async function openStdio(server, cmd) {
  const s = new MCPServerStdio({ name: server, ...cmd });
  await s.connect();
  return adapter(s);
}
await run("openai-agents", [...matrix(openHTTP, openStdio, { after: afterCalls }), ...linkCases(openHTTP, openStdio, afterCalls)], {}, {
  // Why the servers send no resource_link by default:
  "links-stringified-array":
    "with -resource-links, a truncated output's result has two content items (the JSON text and the resource_link), " +
    "and the SDK sends the model the JSON of the whole item list as one string, in which the result's JSON text is " +
    "escaped a second time; a result of one item goes as input_text, as it is",
});
