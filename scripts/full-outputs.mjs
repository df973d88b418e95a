// Reads a truncated command output back whole through resources/read, with two third-party clients: the TypeScript
// SDK's Client, and the MCP Inspector's own client functions (the ones its CLI calls; the CLI itself opens a new
// session per invocation, and an output is readable only by the session whose command made it). For each: one
// session runs a command whose stdout (text with multi-byte characters, so that pages end inside some) and stderr
// (random bytes) pass the output cap, follows the result's stdout_resource and stderr_resource page by page to the
// end, and compares every byte; a second session is refused the same URI. Then the same session starts a process
// whose stdout outgrows its 1 MiB buffer, reads it on until it ends (bytes are dropped), and reads the stdout_resource
// its reads name back whole, from the first byte.
//
//   node scripts/full-outputs.mjs EXECUTOR_MCP_URL WORKSPACE_DIR INSPECTOR_DIR
//
// The executor's bearer token comes from GOALBOX_EXEC_TOKEN. INSPECTOR_DIR is where scripts/inspector.sh installed @modelcontextprotocol/inspector (its node_modules hold the
// TypeScript SDK it uses). Exits 1 with a message on the first mismatch.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, workspace, inspectorDir] = process.argv.slice(2);
if (!url || !workspace || !inspectorDir) {
  console.error("usage: node scripts/full-outputs.mjs EXECUTOR_MCP_URL WORKSPACE_DIR INSPECTOR_DIR");
  process.exit(2);
}
const modules = join(inspectorDir, "node_modules");
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js");
const inspector = await load("@modelcontextprotocol/inspector-cli/build/client/index.js");

// Every request carries the executor's token.
const requestInit = { headers: { Authorization: `Bearer ${process.env.GOALBOX_EXEC_TOKEN ?? ""}` } };

function fail(msg) {
  console.error("full-outputs: FAIL " + msg);
  process.exit(1);
}

// Each client is the same five operations, done its own way.
const clients = {
  "TypeScript SDK": {
    tag: "ts-sdk",
    async open() {
      const client = new Client({ name: "full-outputs-ts", version: "0" });
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
      await client.connect(transport);
      return { client, transport };
    },
    call: (s, args) => s.client.callTool({ name: "sandbox_run_command", arguments: args }),
    tool: (s, name, args) => s.client.callTool({ name, arguments: args }),
    templates: (s) => s.client.listResourceTemplates(),
    read: (s, uri) => s.client.readResource({ uri }),
    async close(s) {
      await s.transport.terminateSession();
      await s.client.close();
    },
  },
  "MCP Inspector": {
    tag: "inspector",
    async open() {
      const client = new Client({ name: "full-outputs-inspector", version: "0" });
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
      await inspector.connect(client, transport);
      return { client, transport };
    },
    call: (s, args) => inspector.callTool(s.client, "sandbox_run_command", args),
    tool: (s, name, args) => inspector.callTool(s.client, name, args),
    templates: (s) => inspector.listResourceTemplates(s.client),
    read: (s, uri) => inspector.readResource(s.client, uri),
    close: (s) => inspector.disconnect(s.transport),
  },
};

const lines = 50000;
let wantStdout = "";
for (let i = 1; i <= lines; i++) wantStdout += `${i} héllo wörld ✓\n`;
const wantStdoutBytes = Buffer.from(wantStdout, "utf8");
const procLines = 300000; // about 1.9 MB: past the process's 1 MiB buffer
let wantProc = "";
for (let i = 1; i <= procLines; i++) wantProc += `${i}\n`;
const wantProcBytes = Buffer.from(wantProc, "utf8");

// readWhole follows next_offset from 0 until the page that ends a complete output.
async function readWhole(c, s, uri, length) {
  const parts = [];
  let offset = 0;
  for (let pages = 0; pages < 1000; pages++) {
    const res = await c.read(s, `${uri}?offset=${offset}&length=${length}`);
    const page = res.contents[0];
    const data = page.blob !== undefined ? Buffer.from(page.blob, "base64") : Buffer.from(page.text, "utf8");
    const meta = page._meta ?? {};
    if (data.length === 0 || data.length > length || meta.offset !== offset || meta.next_offset !== offset + data.length) {
      fail(`${uri} at ${offset}: ${data.length} bytes, _meta ${JSON.stringify(meta)}`);
    }
    parts.push(data);
    offset += data.length;
    if (meta.complete && offset === meta.size) return Buffer.concat(parts);
  }
  fail(`${uri}: not at its end after 1000 pages`);
}

for (const [name, c] of Object.entries(clients)) {
  const s = await c.open();
  const command = `seq 1 ${lines} | sed 's/$/ héllo wörld ✓/'; head -c 300000 /dev/urandom | tee noise-${c.tag}.bin >&2`;
  const res = await c.call(s, { command });
  const out = res.structuredContent;
  if (res.isError || !out?.stdout_truncated || !out.stdout_resource || !out.stderr_resource) {
    fail(`${name}: the result has no resources: ${JSON.stringify(res).slice(0, 500)}`);
  }
  const links = res.content.filter((c) => c.type === "resource_link").map((c) => c.uri);
  // By default the content is the one JSON text item (no resource_link): the URIs are in the structured result.
  if (links.length !== 0 || res.content.length !== 1) {
    fail(`${name}: ${res.content.length} content items, resource_link items ${JSON.stringify(links)}; want the JSON text alone`);
  }
  const tmpl = await c.templates(s);
  if (!tmpl.resourceTemplates.some((t) => t.uriTemplate.startsWith("goalbox-output://"))) {
    fail(`${name}: resources/templates/list has no goalbox-output template`);
  }

  const stdout = await readWhole(c, s, out.stdout_resource, 100001);
  if (!stdout.equals(wantStdoutBytes)) fail(`${name}: stdout read back is ${stdout.length} bytes, want ${wantStdoutBytes.length}, or differs`);
  const noise = readFileSync(join(workspace, `noise-${c.tag}.bin`));
  const stderr = await readWhole(c, s, out.stderr_resource, 65536);
  if (!stderr.equals(noise)) fail(`${name}: stderr read back is ${stderr.length} bytes, want ${noise.length}, or differs`);

  const other = await c.open();
  try {
    await c.read(other, out.stdout_resource);
    fail(`${name}: another session read ${out.stdout_resource}`);
  } catch (err) {
    if (!String(err.message).includes("only by the MCP session whose command made it")) {
      fail(`${name}: another session's read failed, but not with the refusal: ${err.message}`);
    }
  }
  await c.close(other);

  const started = await c.tool(s, "sandbox_start_process", { command: `seq 1 ${procLines}` });
  const pid = started.structuredContent?.process_id;
  if (started.isError || !pid) fail(`${name}: sandbox_start_process: ${JSON.stringify(started).slice(0, 500)}`);
  let read;
  let offset = 0;
  let dropped = 0;
  for (let i = 0; ; i++) {
    read = await c.tool(s, "sandbox_read_process_output", { process_id: pid, stdout_offset: offset, wait_seconds: 1 });
    const o = read.structuredContent;
    if (read.isError || !o) fail(`${name}: sandbox_read_process_output: ${JSON.stringify(read).slice(0, 500)}`);
    offset = o.stdout_offset;
    dropped += o.stdout_dropped;
    if (!o.running && offset === wantProcBytes.length) break;
    if (i > 120) fail(`${name}: process ${pid} not read to its end: ${JSON.stringify({ ...o, stdout: undefined })}`);
  }
  const proc = read.structuredContent;
  const procLinks = read.content.filter((c) => c.type === "resource_link").map((c) => c.uri);
  if (!proc.stdout_resource || procLinks.length !== 0) {
    fail(`${name}: the process's read names no whole stdout: ${JSON.stringify({ ...proc, stdout: undefined })}, links ${JSON.stringify(procLinks)}`);
  }
  const procStdout = await readWhole(c, s, proc.stdout_resource, 500000);
  if (!procStdout.equals(wantProcBytes)) fail(`${name}: the process's stdout read back is ${procStdout.length} bytes, want ${wantProcBytes.length}, or differs`);
  await c.close(s);
  console.log(`full-outputs: ok   ${name}: ${stdout.length} bytes of stdout and ${stderr.length} of stderr read back whole, refused to another session; ` +
    `a process's ${procStdout.length} bytes of stdout read back whole (${dropped} of them dropped from its buffer)`);
}
