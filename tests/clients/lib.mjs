// The shared half of the client matrix: starting the two servers built from this repo (over streamable HTTP with
// their generated bearer token, or as the command a client spawns over stdio), the calls every library makes
// (every tool of each server, a tool error, a truncated output read back whole, a process from start to stop), a
// local stand-in for the model APIs that records the request bodies a chat class would send, and the run loop with
// its list of known failures.
//
// Each library's file gives an adapter per connection: tools() lists, call() calls a tool the library's own way and
// says what the library made of the result (a tool error must arrive as the library's error, the JSON text as text),
// read() reads a resource through the library when it can. Nothing here talks MCP itself: that is the libraries'.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const bins = {
  filesystem: process.env.GOALBOX_FS_BIN,
  executor: process.env.GOALBOX_EXEC_BIN,
};
if (!bins.filesystem || !bins.executor) {
  console.error("clients: GOALBOX_FS_BIN and GOALBOX_EXEC_BIN name the server binaries (scripts/clients.sh sets them)");
  process.exit(2);
}

const cleanups = [];
// Every server and folder this run made goes when it ends, however it ends.
export async function cleanup() {
  while (cleanups.length) {
    try {
      await cleanups.pop()();
    } catch {}
  }
}
process.on("exit", () => {
  for (const f of cleanups) {
    try {
      f();
    } catch {}
  }
});

// A fresh workspace folder, and beside it the folders the servers would otherwise keep in the machine's cache (the
// filesystem server's checkpoints, the executor's per-workspace home and build caches), so that a run leaves nothing.
export function workspace() {
  const root = mkdtempSync(join(tmpdir(), "goalbox-clients-"));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, "ws"));
  return { ws: join(root, "ws"), checkpoints: join(root, "checkpoints"), cache: join(root, "cache"), root };
}

function serverArgs(server, dirs) {
  const args = ["-workspace", dirs.ws];
  if (server === "filesystem") args.push("-checkpoint-dir", dirs.checkpoints);
  else args.push("-cache-dir", dirs.cache);
  return args;
}

// startHTTP starts a server on a free loopback port with a generated token, as a user would, and returns its URL and
// the header every request needs. The port and token come from the server itself: its "serving" log line and the
// token file it writes.
export async function startHTTP(server, dirs, extraArgs = []) {
  const tokenFile = join(dirs.root, `${server}.token`);
  const child = spawn(bins[server], ["-addr", "127.0.0.1:0", "-token-file", tokenFile, ...serverArgs(server, dirs), ...extraArgs], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  cleanups.push(() => child.kill("SIGTERM"));
  const log = [];
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${server} did not start in 20 s:\n${log.join("\n")}`)), 20000);
    child.on("exit", (code) => reject(new Error(`${server} exited with ${code}:\n${log.join("\n")}`)));
    createInterface({ input: child.stderr }).on("line", (line) => {
      if (log.length < 200) log.push(line);
      if (!line.startsWith("{")) return;
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "serving" && rec.url) {
          clearTimeout(timer);
          resolve(rec.url);
        }
      } catch {}
    });
  });
  const token = readFileSync(tokenFile, "utf8").trim();
  return { url, token, headers: { Authorization: `Bearer ${token}` }, stop: () => child.kill("SIGTERM") };
}

// stdio is the command a client spawns to serve it over stdin and stdout.
export function stdio(server, dirs, extraArgs = []) {
  // -log-level error: some clients pass the server's stderr through to theirs.
  return { command: bins[server], args: ["-stdio", "-log-level", "error", ...serverArgs(server, dirs), ...extraArgs] };
}

export class Failure extends Error {}

// Known defects of a library, written down with their reason: run() gets them from the library's file, and a check
// that finds one calls issue() instead of check(). A known defect that shows is printed and the case goes on; one
// that no longer shows fails the case (take it off the list); an unknown one fails as check() does.
let knownIssues = {};
let notes = [];
export function issue(key, bad, detail) {
  const k = knownIssues[key];
  if (bad && !k) throw new Failure(detail);
  if (!bad && k) throw new Failure(`known issue "${key}" (${k}) no longer shows: take it off the list`);
  if (bad) notes.push(key);
}
export function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}
const show = (v) => {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s && s.length > 600 ? s.slice(0, 600) + "…" : s;
};

// data reads the JSON text a result carries: the servers put the structured result in a text block too, and that
// text is what a model sees in every library. Not JSON means the library lost or mangled it.
function data(res, what) {
  check(!res.error, `${what}: a tool error: ${show(res.text)}`);
  try {
    return JSON.parse(res.text);
  } catch {
    throw new Failure(`${what}: the text the library carries is not the result's JSON: ${show(res.text)}`);
  }
}

async function expectError(conn, name, args, want) {
  const res = await conn.call(name, args);
  check(res.error, `${name} ${JSON.stringify(args)}: want a tool error, got ${show(res.text)}`);
  check(res.text.includes(want), `${name}: the error does not say ${JSON.stringify(want)}: ${show(res.text)}`);
}

// The calls on each server. Every tool the server lists must be called; a tool added to a server fails the run until
// it is called here.
const scenarios = {
  async filesystem(conn, called) {
    const call = async (name, args) => {
      called.add(name);
      return data(await conn.call(name, args), name);
    };
    let r = await call("sandbox_write_file", { path: "src/hello.py", content: 'print("hi")\n' });
    check(r.created === true && r.bytes_written === 12, `write: ${show(r)}`);
    r = await call("sandbox_read_file", { path: "src/hello.py" });
    check(r.content === 'print("hi")\n' && r.total_lines === 1, `read: ${show(r)}`);
    r = await call("sandbox_edit_file", { path: "src/hello.py", old_text: '"hi"', new_text: '"hello"' });
    check(r.replacements === 1 && r.diff.includes('+print("hello")'), `edit: ${show(r)}`);
    r = await call("sandbox_list_files", { path: ".", depth: 3 });
    check(r.entries.some((e) => e.path === "src/hello.py"), `list: ${show(r)}`);
    r = await call("sandbox_search_files", { pattern: "hello", include: "*.py" });
    check(r.matches.length === 1 && r.matches[0].path === "src/hello.py" && r.matches[0].line === 1, `search: ${show(r)}`);
    const cp = await call("sandbox_checkpoint", { label: "client matrix" });
    check(typeof cp.id === "string" && cp.id !== "", `checkpoint: ${show(cp)}`);
    await call("sandbox_write_file", { path: "notes.txt", content: "one\n" });
    r = await call("sandbox_diff", { from: cp.id });
    check(r.files.some((f) => f.path === "notes.txt" && f.change === "added"), `diff: ${show(r)}`);
    r = await call("sandbox_restore", { id: cp.id });
    check(r.id === cp.id && r.deleted === 1, `restore: ${show(r)}`);
    r = await call("sandbox_list_checkpoints", {});
    check(r.checkpoints.some((c) => c.id === cp.id), `list checkpoints: ${show(r)}`);
    r = await call("sandbox_move_path", { source: "src/hello.py", destination: "lib/hello.py" });
    check(r.destination === "lib/hello.py", `move: ${show(r)}`);
    r = await call("sandbox_delete_path", { path: "lib", recursive: true });
    check(r.deleted === true, `delete: ${show(r)}`);
    await expectError(conn, "sandbox_read_file", { path: "../outside.txt" }, "outside the workspace");
  },

  async executor(conn, called) {
    const call = async (name, args) => {
      called.add(name);
      return data(await conn.call(name, args), name);
    };
    let r = await call("sandbox_run_command", { command: "echo hello" });
    check(r.exit_code === 0 && r.stdout === "hello\n", `run: ${show(r)}`);

    // A stdout past the output cap: the result keeps head and tail and names the whole stream, read back in pages.
    r = await call("sandbox_run_command", { command: "seq 1 100000" });
    check(r.stdout_truncated === true && typeof r.stdout_resource === "string", `truncated run: ${show(r)}`);
    // The era the library settled on decides the scope (docs/executor.md): a session (2025-11-25, or either era over
    // stdio, whose one client is the session) owns its outputs and processes, and its list shows them; a request
    // without a session (2026-07-28 over HTTP) gets handles, 26 base32 characters, which no list shows.
    const stateless = statelessCase(conn);
    const host = new URL(r.stdout_resource).host;
    check(/^[a-z2-7]+$/.test(host) && (host.length === 26) === stateless,
      `the output's URI in ${stateless ? "a request without a session" : "a session"}: ${r.stdout_resource}`);
    let want = "";
    for (let i = 1; i <= 100000; i++) want += `${i}\n`;
    const whole = await readWhole(conn, r.stdout_resource);
    check(whole === want, `the full stdout read back has ${whole.length} bytes, want ${want.length}, equal: false`);
    // The same bytes through the tool, for the clients whose model has no resource tool: a page from the middle.
    r = await call("sandbox_read_output", { uri: r.stdout_resource, offset: 300000, length: 1000 });
    check(r.offset === 300000 && r.text === want.slice(300000, 301000) && r.size === want.length,
      `read output: ${show({ ...r, text: r.text?.slice(0, 40) })}`);

    // A process from start to stop: stdin open, a line in, the line out, listed, stopped, seen ended.
    const p = await call("sandbox_start_process", { command: "cat", stdin: "open" });
    check(typeof p.process_id === "string" && p.process_id !== "", `start: ${show(p)}`);
    check(/^proc-[a-z2-7]{26}$/.test(p.process_id) === stateless,
      `the process_id in ${stateless ? "a request without a session" : "a session"}: ${show(p)}`);
    r = await call("sandbox_write_process_input", { process_id: p.process_id, data: "ping\n" });
    check(r.bytes_written === 5, `write input: ${show(r)}`);
    let out = "";
    for (let i = 0; i < 10 && !out.includes("ping"); i++) {
      r = await call("sandbox_read_process_output", { process_id: p.process_id, wait_seconds: 2 });
      out = r.stdout;
    }
    check(out === "ping\n" && r.running === true, `read output: ${show(r)}`);
    r = await call("sandbox_list_processes", {});
    if (stateless) check(Array.isArray(r.processes) && r.processes.length === 0, `list processes without a session: ${show(r)}`);
    else check((r.processes ?? []).some((q) => q.process_id === p.process_id && q.running), `list processes: ${show(r)}`);
    r = await call("sandbox_stop_process", { process_id: p.process_id, grace_seconds: 2 });
    check(r.process_id === p.process_id && typeof r.exit_code === "number", `stop: ${show(r)}`);
    r = await call("sandbox_read_process_output", { process_id: p.process_id });
    check(r.running === false && r.stdout === "ping\n", `read after stop: ${show(r)}`);

    await expectError(conn, "sandbox_run_command", { command: "true", cwd: ".." }, "outside the workspace");
  },

  // The executor with -resource-links (not the default): a truncated output's result has a resource_link item after
  // the JSON text. The library must take the result; what it then gives a model is the case's after().
  async links(conn) {
    const res = await conn.call("sandbox_run_command", { command: "seq 1 100000" });
    const r = data(res, "sandbox_run_command");
    check(r.stdout_truncated === true && typeof r.stdout_resource === "string", `truncated run: ${show(r)}`);
  },
};

// statelessCase says whether conn's calls go without a session: over HTTP, in 2026-07-28 or later, as the library
// reports the version it negotiated (conn.protocolVersion; a library without it speaks 2025-11-25 only).
function statelessCase(conn) {
  return conn.http !== undefined && (conn.protocolVersion?.() ?? "") >= "2026-07-28";
}

// readWhole follows an output URI page by page through the library's resource read, with the _meta each page carries
// (next_offset, size, complete) telling where the next page starts and when it is the end.
async function readWhole(conn, uri) {
  check(conn.read, "the library has no way to read a resource");
  let text = "";
  let offset = 0;
  for (let pages = 0; pages < 100; pages++) {
    const page = await conn.read(offset === 0 ? uri : `${uri}?offset=${offset}`);
    check(typeof page.text === "string", `resources/read of ${uri}: no text: ${show(page)}`);
    const meta = page.meta;
    check(meta && typeof meta.next_offset === "number", `resources/read: the page's _meta did not reach the caller: ${show(page)}`);
    text += page.text;
    offset = meta.next_offset;
    if (offset === meta.size && meta.complete) return text;
  }
  throw new Failure(`${uri}: not at the end after 100 pages`);
}

// sessionEnded checks that closing the library's client ended its HTTP session on the server (a DELETE), as the
// server's /healthz counts them: a session left open holds its processes and kept outputs until it expires.
async function sessionEnded(http) {
  const health = http.url.replace(/\/mcp$/, "/healthz");
  let live = -1;
  for (let i = 0; i < 20; i++) {
    live = (await (await fetch(health, { headers: http.headers })).json()).sessions.live;
    if (live === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  issue("session-left-open", live !== 0, `the client closed, and the server still has ${live} live sessions`);
}

// The run: each case is one connection (a library, a transport, a server, maybe an era). A case in known lists a
// failure someone has written down with its reason: it must still fail with that message, and passing fails the
// run too, so the list is kept true when the bug is fixed.
export async function run(lib, cases, known = {}, issues = {}) {
  knownIssues = issues;
  const shown = new Set();
  let failed = 0;
  for (const c of cases) {
    const id = `${lib} ${c.name}`;
    const t0 = Date.now();
    notes = [];
    let err = null;
    let conn = null;
    try {
      const dirs = workspace();
      conn = await c.open(dirs);
      const listed = (await conn.tools()).map((t) => t.name).sort();
      check(listed.length > 0, "no tools listed");
      const called = new Set();
      await scenarios[c.scenario ?? c.server](conn, called);
      if (!c.scenario) {
        const missed = listed.filter((n) => !called.has(n));
        check(missed.length === 0, `tools listed but not called: ${missed.join(", ")}`);
      }
      if (c.after) await c.after(conn, listed, c);
    } catch (e) {
      err = e;
    } finally {
      if (conn?.close) {
        try {
          await conn.close();
          if (!err && conn.http) await sessionEnded(conn.http);
        } catch (e) {
          err ??= e;
        }
      }
    }
    const ms = Date.now() - t0;
    const k = known[c.name];
    if (k) {
      if (err && String(err.message).includes(k.message)) {
        console.log(`clients: known ${id}: ${k.reason} (${ms} ms)`);
      } else if (err) {
        console.log(`clients: FAIL ${id}: a known failure (${k.reason}) now fails differently: ${err.stack ?? err}`);
        failed++;
      } else {
        console.log(`clients: FAIL ${id}: listed as a known failure (${k.reason}) but it passes: take it off the list`);
        failed++;
      }
    } else if (err) {
      console.log(`clients: FAIL ${id}: ${err instanceof Failure ? err.message : err.stack ?? err} (${ms} ms)`);
      failed++;
    } else {
      console.log(`clients: ok   ${id} (${ms} ms)`);
    }
    if (notes.length) console.log(`clients:        with known issues: ${[...new Set(notes)].join(", ")}`);
    for (const n of notes) shown.add(n);
  }
  for (const n of shown) console.log(`clients: known issue ${n} of ${lib}: ${knownIssues[n]}`);
  await cleanup();
  if (failed) console.log(`clients: ${lib}: ${failed} of ${cases.length} cases failed`);
  // Exit now: the HTTP servers got SIGTERM and finish their graceful shutdown on their own, which for a server with
  // a client's stream still open takes seconds that the run need not wait for.
  process.exit(failed ? 1 : 0);
}

// The matrix each library runs: both servers over both transports.
export function matrix(openHTTP, openStdio, extra = {}) {
  const cases = [];
  for (const transport of ["http", "stdio"]) {
    for (const server of ["filesystem", "executor"]) {
      cases.push({
        name: `${transport} ${server}`,
        server,
        ...extra,
        open: async (dirs) => {
          if (transport === "http") {
            const http = await startHTTP(server, dirs);
            return { ...(await openHTTP(server, http, dirs)), http };
          }
          return openStdio(server, stdio(server, dirs), dirs);
        },
      });
    }
  }
  return cases;
}

// linkCases are the executor with -resource-links over both transports, to show what a library gives a model of a
// result with a resource_link; not part of the default matrix, since the servers send none by default.
export function linkCases(openHTTP, openStdio, after) {
  const args = ["-resource-links"];
  return [
    { name: "http executor -resource-links", server: "executor", scenario: "links", after,
      open: async (dirs) => {
        const http = await startHTTP("executor", dirs, args);
        return { ...(await openHTTP("executor", http, dirs)), http };
      } },
    { name: "stdio executor -resource-links", server: "executor", scenario: "links", after,
      open: async (dirs) => openStdio("executor", stdio("executor", dirs, args), dirs) },
  ];
}

// modelStub is a local HTTP server standing in for the model APIs, so that a chat class sends its real request and
// the body can be read; it answers with the smallest valid reply of the API asked. No model is called. The reply to
// the Responses API can be scripted per request (the OpenAI Agents run needs a function call, then a message).
export async function modelStub(responses = []) {
  const bodies = [];
  const srv = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      let body = null;
      try {
        body = JSON.parse(raw);
      } catch {}
      bodies.push({ path: req.url, body });
      let reply;
      if (req.url.endsWith("/chat/completions")) {
        reply = {
          id: "chatcmpl-stub", object: "chat.completion", created: 0, model: body?.model ?? "stub",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "ok" } }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        };
      } else if (req.url.endsWith("/messages")) {
        reply = {
          id: "msg_stub", type: "message", role: "assistant", model: body?.model ?? "stub",
          content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        };
      } else if (req.url.endsWith("/responses")) {
        const output = responses.shift() ?? [
          { type: "message", id: "msg_stub", role: "assistant", status: "completed",
            content: [{ type: "output_text", text: "ok", annotations: [] }] },
        ];
        reply = {
          id: "resp_stub", object: "response", created_at: 0, status: "completed", model: body?.model ?? "stub", output,
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 0 } },
        };
      } else {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  cleanups.push(() => srv.close());
  return { url: `http://127.0.0.1:${srv.address().port}`, bodies, close: () => srv.close() };
}
