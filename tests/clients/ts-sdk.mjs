// The official TypeScript SDK 1.x (@modelcontextprotocol/sdk): Client over StreamableHTTPClientTransport and
// StdioClientTransport. A tool error is a result with isError (the SDK does not throw for it); structuredContent is
// checked against the tool's output schema by the SDK itself, and must agree with the JSON text.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, matrix, run } from "./lib.mjs";

function adapter(client, close) {
  return {
    tools: async () => (await client.listTools()).tools,
    async call(name, args) {
      const res = await client.callTool({ name, arguments: args });
      const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
      if (!res.isError) {
        check(res.structuredContent !== undefined, `${name}: no structuredContent`);
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

await run(
  "ts-sdk 1.x",
  matrix(
    async (server, http) => {
      const client = new Client({ name: "goalbox-matrix-ts-sdk", version: "0" });
      const transport = new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: http.headers } });
      await client.connect(transport);
      // close() alone sends no DELETE: end the session on the server too, as a well-behaved client should.
      return adapter(client, async () => {
        await transport.terminateSession();
        await client.close();
      });
    },
    async (server, cmd) => {
      const client = new Client({ name: "goalbox-matrix-ts-sdk", version: "0" });
      await client.connect(new StdioClientTransport({ ...cmd, stderr: "ignore" }));
      return adapter(client, () => client.close());
    },
  ),
);
