// The official TypeScript SDK's v2 client (@modelcontextprotocol/client), in each protocol era: 2025-11-25 (its
// default, initialize and a session), pinned to 2026-07-28 (stateless: server/discover, the version in each
// request's _meta), and in auto mode (probe, then the era the server speaks), over streamable HTTP and stdio.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { check, issue, matrix, run } from "./lib.mjs";

function adapter(client, close) {
  return {
    tools: async () => (await client.listTools()).tools,
    async call(name, args) {
      const res = await client.callTool({ name, arguments: args });
      const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
      if (!res.isError) {
        check(JSON.stringify(JSON.parse(text)) === JSON.stringify(res.structuredContent), `${name}: the text is not the structuredContent`);
      }
      return { error: res.isError === true, text };
    },
    async read(uri) {
      const c = (await client.readResource({ uri })).contents[0];
      return { text: c.text, meta: c._meta };
    },
    close,
  };
}

// The era each mode must settle on per transport. "auto" probes with server/discover and falls back to initialize
// on a legacy answer: over HTTP that is 2025-11-25 today (a known issue below).
const eras = {
  "2025-11-25": { options: {}, want: { http: "2025-11-25", stdio: "2025-11-25" } },
  "2026-07-28": { options: { versionNegotiation: { mode: { pin: "2026-07-28" } } }, want: { http: "2026-07-28", stdio: "2026-07-28" } },
  auto: { options: { versionNegotiation: { mode: "auto" } }, want: { http: "2026-07-28", stdio: "2026-07-28" } },
};
const cases = [];
// negotiated checks the version the client settled on; auto over HTTP falling back is the known issue.
function negotiated(client, era, transport) {
  const got = client.getNegotiatedProtocolVersion();
  const want = eras[era].want[transport];
  if (era === "auto" && transport === "http") issue("auto-http-legacy-fallback", got !== want, `auto over HTTP negotiated ${got}`);
  else check(got === want, `negotiated ${got}, want ${want}`);
}
for (const era of Object.keys(eras)) {
  const newClient = () => new Client({ name: "goalbox-matrix-ts-client-v2", version: "0" }, eras[era].options);
  for (const c of matrix(
    async (server, http) => {
      const client = newClient();
      const transport = new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: http.headers } });
      await client.connect(transport);
      negotiated(client, era, "http");
      return adapter(client, async () => {
        if (transport.sessionId) await transport.terminateSession();
        await client.close();
      });
    },
    async (server, cmd) => {
      const client = newClient();
      await client.connect(new StdioClientTransport({ ...cmd, stderr: "ignore" }));
      negotiated(client, era, "stdio");
      return adapter(client, () => client.close());
    },
  )) {
    cases.push({ ...c, name: `${era} ${c.name}` });
  }
}

// The servers are stateful over streamable HTTP: a 2026-07-28 client gets -32022 from initialize-less requests
// (the stateless era is being added to pkg/mcpserve). Each entry must fail with this message; when the era is served
// the cases pass and this list must be emptied.
const stateless = {
  reason: "streamable HTTP serves 2025-11-25 sessions only, no stateless 2026-07-28 era yet",
  message: "Unsupported protocol version: 2026-07-28",
};
await run(
  "ts-client v2",
  cases,
  { "2026-07-28 http filesystem": stateless, "2026-07-28 http executor": stateless },
  {
    "auto-http-legacy-fallback":
      "in auto mode the client probes with server/discover; over streamable HTTP the servers answer as 2025-11-25 " +
      "servers, so it falls back to initialize (over stdio it settles on 2026-07-28)",
  },
);
