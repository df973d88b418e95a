// LangChain's MCP adapters (@langchain/mcp-adapters): MultiServerMCPClient over streamable HTTP and stdio, its tools
// invoked as LangChain tools (a tool error is a thrown ToolException), and then the tool results as the two chat
// classes the seeds of this project use would send them: LangGraph's ToolNode turns tool calls into ToolMessages
// (an error into a ToolMessage with status "error"), and ChatOpenAI and ChatAnthropic send them to a local stand-in
// for their APIs, whose request bodies must carry each result's JSON text as text the model can read (not
// "[object Object]", not dropped).
import { ChatAnthropic } from "@langchain/anthropic";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { ChatOpenAI } from "@langchain/openai";
import { check, issue, linkCases, matrix, modelStub, run } from "./lib.mjs";

// text is what a LangChain tool's content holds as text: a string, a text block, or the text blocks of a list (with
// -resource-links the list has a file block too, which the chat classes handle or refuse: see afterCalls).
function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((b) => b.type === "text").map(text).join("\n");
  if (content && content.type === "text") return content.text;
  return JSON.stringify(content);
}

async function adapter(server, connection) {
  const mcp = new MultiServerMCPClient({ mcpServers: { [server]: connection } });
  const tools = await mcp.getTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  return {
    server,
    lcTools: tools,
    tools: async () => tools,
    async call(name, args) {
      try {
        const out = await byName[name].invoke(args);
        const t = text(out);
        check(!t.includes("[object Object]"), `${name}: the tool's content is ${t}`);
        return { error: false, text: t };
      } catch (e) {
        check(e.name === "ToolException", `${name}: threw ${e.stack}`);
        return { error: true, text: e.message };
      }
    },
    // MultiServerMCPClient.readResource keeps uri, mimeType and text but drops each content's _meta (the page's
    // next_offset, size and complete), so the pages are read through the SDK client it exposes.
    async read(uri) {
      const viaAdapter = (await mcp.readResource(server, uri))[0];
      const c = (await (await mcp.getClient(server)).readResource({ uri })).contents[0];
      check(viaAdapter.text === c.text, "the adapter's readResource and the SDK client's read differ");
      return { text: c.text, meta: c._meta };
    },
    close: () => mcp.close(),
  };
}

// The calls the chat classes carry, per server: two results and a tool error. ToolNode runs them at once, so none
// depends on another.
const modelCalls = {
  filesystem: [
    { name: "sandbox_write_file", args: { path: "a.txt", content: "héllo \"quoted\"\n" }, want: '"bytes_written":16' },
    { name: "sandbox_search_files", args: { pattern: "hello", include: "*.py" }, want: '"matches":[]' },
    { name: "sandbox_read_file", args: { path: "../outside.txt" }, want: "outside the workspace", error: true },
  ],
  executor: [
    { name: "sandbox_run_command", args: { command: "printf 'a\\tb \"c\"\\n'" }, want: '"stdout":"a\\tb \\"c\\"\\n"' },
    { name: "sandbox_run_command", args: { command: "seq 1 100000" }, want: '"stdout_truncated":true' },
    { name: "sandbox_run_command", args: { command: "true", cwd: ".." }, want: "outside the workspace", error: true },
  ],
  links: [
    { name: "sandbox_run_command", args: { command: "seq 1 100000" }, want: '"stdout_truncated":true' },
    { name: "sandbox_run_command", args: { command: "true", cwd: ".." }, want: "outside the workspace", error: true },
  ],
};

// openAIText and anthropicText read a tool result's content in each API's request body as the model reads it.
const openAIText = (c) => (typeof c === "string" ? c : c.map((p) => (p.type === "text" ? p.text : JSON.stringify(p))).join("\n"));
const anthropicText = (c) => (typeof c === "string" ? c : c.map((p) => (p.type === "text" ? p.text : JSON.stringify(p))).join("\n"));

// modelReads checks the text a chat class sends as one tool result: a result must be the result's JSON text itself
// (a known defect wraps it, see the list at the end), a tool error its message.
function modelReads(api, c, t) {
  const where = `${api} sends ${c.name}'s result as ${t.slice(0, 600)}`;
  check(!t.includes("[object Object]"), where);
  if (c.error) {
    check(t.includes(c.want), where);
    return;
  }
  let obj;
  try {
    obj = JSON.parse(t);
  } catch {
    throw new Error(`${where}: not JSON`);
  }
  const wrapped = obj !== null && obj.type === "text" && typeof obj.text === "string";
  issue("structured-wrapper", wrapped, where);
  check((wrapped ? obj.text : t).includes(c.want), where);
}

// send has a chat class send the messages; with -resource-links (case.scenario "links") a refusal to send is the
// known issue key, and without it any error fails the case. It returns the request body, or null when refused.
async function send(c, key, refusal, model, messages, stub) {
  let err = null;
  try {
    await model.invoke(messages);
  } catch (e) {
    err = e;
  }
  if (err && !(c.scenario && err.message.includes(refusal))) throw err;
  if (c.scenario) issue(key, err !== null, `${key}: ${err?.message}`);
  return err ? null : stub.bodies.at(-1);
}

async function afterCalls(conn, listed, kase) {
  const calls = modelCalls[kase.scenario ?? conn.server];
  const ai = new AIMessage({
    content: "",
    tool_calls: calls.map((c, i) => ({ id: `call_${i}`, name: c.name, args: c.args, type: "tool_call" })),
  });
  const { messages: results } = await new ToolNode(conn.lcTools, { handleToolErrors: true }).invoke({ messages: [ai] });
  check(results.length === calls.length, `ToolNode gave ${results.length} messages for ${calls.length} calls`);
  check(results[calls.length - 1].status === "error", `the tool error is a ToolMessage with status ${results[calls.length - 1].status}`);
  const messages = [new HumanMessage("go"), ai, ...results];
  const stub = await modelStub();

  const chatOpenAI = new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "stub", configuration: { baseURL: stub.url }, maxRetries: 0 });
  const oa = await send(kase, "links-openai-refuses", "URL file blocks with source_type url must be formatted as a data URL", chatOpenAI, messages, stub);
  if (oa) check(oa.path.endsWith("/chat/completions"), `ChatOpenAI sent to ${oa.path}`);
  for (const [i, c] of oa ? calls.entries() : []) {
    const m = oa.body.messages.find((x) => x.role === "tool" && x.tool_call_id === `call_${i}`);
    check(m, `ChatOpenAI: no tool message for ${c.name}: ${JSON.stringify(oa.body.messages).slice(0, 800)}`);
    modelReads("ChatOpenAI", c, openAIText(m.content));
  }

  const chatAnthropic = new ChatAnthropic({ model: "claude-sonnet-4-5", apiKey: "stub", anthropicApiUrl: stub.url, maxRetries: 0 });
  const an = await send(kase, "links-anthropic-refuses", "Unsupported file mime type for file url source: text/plain", chatAnthropic, messages, stub);
  if (!an) return;
  check(an.path.endsWith("/messages"), `ChatAnthropic sent to ${an.path}`);
  const blocks = an.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result");
  for (const [i, c] of calls.entries()) {
    const b = blocks.find((x) => x.tool_use_id === `call_${i}`);
    check(b, `ChatAnthropic: no tool_result for ${c.name}: ${JSON.stringify(an.body.messages).slice(0, 800)}`);
    modelReads("ChatAnthropic", c, anthropicText(b.content));
  }
  const err = blocks.find((x) => x.tool_use_id === `call_${calls.length - 1}`);
  issue("anthropic-is-error", err.is_error !== true, `ChatAnthropic sends the tool error without is_error: ${JSON.stringify(err)}`);
  stub.close();
}

const openHTTP = (server, http) => adapter(server, { transport: "http", url: http.url, headers: http.headers });
const openStdio = (server, cmd) => adapter(server, { transport: "stdio", ...cmd, stderr: "ignore" });
await run(
  "langchain",
  [...matrix(openHTTP, openStdio, { after: afterCalls }), ...linkCases(openHTTP, openStdio, afterCalls)],
  {},
  {
    "structured-wrapper":
      "@langchain/mcp-adapters 1.1.4 returns a result that has structuredContent as one text block object " +
      "({type, text, structuredContent}), not as a string; @langchain/core then JSON-stringifies that object into the " +
      "ToolMessage, so ChatOpenAI and ChatAnthropic send the result's JSON text escaped a second time, followed by the " +
      "same result again as structuredContent (readable, about twice the tokens). The servers cannot avoid it but by " +
      "dropping structuredContent, which the MCP specification requires of a tool with an output schema",
    "anthropic-is-error":
      "ChatAnthropic 1.5.11 sends a ToolMessage of status \"error\" as a tool_result without is_error: the model " +
      "sees the error only in its text (\"Error: ... Please fix your mistakes.\")",
    "session-left-open":
      "MultiServerMCPClient.close() sends no DELETE: the HTTP session, with its processes and kept outputs, lives on " +
      "the server until its idle timeout",
    // Why the servers send no resource_link by default:
    "links-openai-refuses":
      "with -resource-links, the adapters turn the resource_link into a file block with a goalbox-output:// URL, " +
      "and ChatOpenAI throws before sending: \"URL file blocks with source_type url must be formatted as a data URL for " +
      "ChatOpenAI\"",
    "links-anthropic-refuses":
      "with -resource-links, ChatAnthropic throws before sending the same file block: \"Unsupported file mime type for " +
      "file url source: text/plain\"",
  },
);
