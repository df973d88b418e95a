// The official TypeScript SDK's v2 client (@modelcontextprotocol/client), in each protocol era: 2025-11-25 (its
// default, initialize and a session), pinned to 2026-07-28 (stateless: server/discover, the version in each
// request's _meta), and in auto mode (probe, then the era the server speaks), over streamable HTTP and stdio.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { check, matrix, run } from "./lib.mjs";

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
    protocolVersion: () => client.getNegotiatedProtocolVersion(),
    close,
  };
}

// The era each mode must settle on per transport. "auto" probes with server/discover and falls back to initialize
// only on a legacy answer: both servers answer it on both transports (over HTTP one /mcp serves both eras, routed
// by the MCP-Protocol-Version header), so auto settles on 2026-07-28 everywhere.
const eras = {
  "2025-11-25": { options: {}, want: { http: "2025-11-25", stdio: "2025-11-25" } },
  "2026-07-28": { options: { versionNegotiation: { mode: { pin: "2026-07-28" } } }, want: { http: "2026-07-28", stdio: "2026-07-28" } },
  auto: { options: { versionNegotiation: { mode: "auto" } }, want: { http: "2026-07-28", stdio: "2026-07-28" } },
};
const cases = [];
// negotiated checks the version the client settled on.
function negotiated(client, era, transport) {
  const got = client.getNegotiatedProtocolVersion();
  const want = eras[era].want[transport];
  check(got === want, `negotiated ${got}, want ${want}`);
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

await run("ts-client v2", cases);
