// Drives the filesystem server with the official TypeScript SDK client over streamable HTTP, for
// TestTypeScriptSDKClient: reads an image, writes random bytes as base64 and reads them back, and reads a binary
// file without the option. The SDK validates each structuredContent against the tool's declared outputSchema
// (it lists the tools first), so a result that does not match fails the call. Prints one JSON object.
import { pathToFileURL } from "node:url";
import { randomBytes, createHash } from "node:crypto";

const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(pathToFileURL(`${sdk}/dist/esm/client/index.js`).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(`${sdk}/dist/esm/client/streamableHttp.js`).href);

const client = new Client({ name: "fsserver-ts-test", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL)));
await client.listTools();
const call = (name, args) => client.callTool({ name, arguments: args });

const bytes = randomBytes(200_000);
const out = {};
out.image = await call("sandbox_read_file", { path: "plot.png" });
out.write = await call("sandbox_write_file", { path: "random.bin", encoding: "base64", content: bytes.toString("base64") });
out.readBack = await call("sandbox_read_file", { path: "random.bin", encoding: "base64" });
out.binaryAsText = await call("sandbox_read_file", { path: "random.bin" });
out.sha256 = createHash("sha256").update(bytes).digest("hex");
out.roundTripEqual = Buffer.from(out.readBack.structuredContent.content, "base64").equals(bytes);
delete out.readBack.content; // the same JSON as structuredContent; kept out to keep the output short
console.log(JSON.stringify(out));
await client.close();
