// Validates server.json files for the MCP registry against the registry's published schema with ajv, and against the
// registry's own rules for the two package types they name, which its validator checks online at publish time and
// which are checked here offline (github.com/modelcontextprotocol/registry, internal/validators/registries/mcpb.go
// and oci.go): an MCPB package is an https release asset on GitHub whose URL contains "mcp", with its SHA-256; an OCI
// package names its registry (an allowed one) and tag in the identifier and has no version, registryBaseUrl or
// fileSha256; and the image must carry the label io.modelcontextprotocol.server.name with the server's name (the
// Dockerfile the image is built from, and the image itself where it is built here). Then broken copies of each file
// must be refused, so that a validator that accepts anything fails this run. Last, where the image is built here,
// the OCI package is run as a registry client would run it and must serve the server's tools.
//
//   node registry.mjs SCHEMA REPO FILE...
//
// SCHEMA is the registry's schema file (scripts/setup-clients.sh copies it from the registry's Go module), REPO the
// checkout (for the Dockerfiles and the bundles' manifests), FILE the server.json files scripts/mcpb.sh wrote.
import { spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const [schemaFile, repo, ...files] = process.argv.slice(2);
if (!schemaFile || !repo || files.length === 0) {
  console.error("usage: node registry.mjs SCHEMA REPO FILE...");
  process.exit(2);
}
const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
// strict off: the registry's schema carries OpenAPI's "example" beside the JSON Schema keywords.
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(schema);

const dockerfiles = { filesystem: "deploy/Dockerfile.fs", executor: "deploy/Dockerfile.exec" };
const allowedOCI = ["docker.io", "ghcr.io", "quay.io", "mcr.microsoft.com"];

// problems lists what the registry would refuse in doc, the server.json of server.
function problems(doc, server) {
  const out = [];
  // The registry refuses version ranges (its schema says so in prose; its validator checks).
  if (/^[\^~<>=]|[*xX](\.|$)|\|\||\s/.test(String(doc.version))) out.push(`version ${doc.version} is a range`);
  if (!validate(doc)) {
    for (const e of validate.errors) out.push(`schema: ${e.instancePath || "/"} ${e.message}`);
  }
  if (doc.$schema !== schema.$id) out.push(`$schema is ${doc.$schema}, the schema validated against is ${schema.$id}`);
  for (const [i, p] of (doc.packages ?? []).entries()) {
    const at = `packages[${i}] (${p.registryType})`;
    if (p.registryType === "mcpb") {
      let u;
      try {
        u = new URL(p.identifier);
      } catch {
        out.push(`${at}: identifier is not a URL`);
        continue;
      }
      if (u.protocol !== "https:") out.push(`${at}: not https`);
      if (!p.identifier.toLowerCase().includes("mcp")) out.push(`${at}: the URL must contain "mcp"`);
      if (u.host !== "github.com" || !/^\/[^/]+\/[^/]+\/releases\/download\/[^/]+\/[^/]+$/.test(u.pathname)) {
        out.push(`${at}: not a GitHub release asset (/owner/repo/releases/download/tag/file)`);
      }
      if (!p.fileSha256) out.push(`${at}: no fileSha256`);
      if (p.registryBaseUrl) out.push(`${at}: has registryBaseUrl`);
      if (u.pathname.split("/")[5] !== `v${doc.version}`) out.push(`${at}: the release tag is not v${doc.version}`);
    } else if (p.registryType === "oci") {
      for (const f of ["registryBaseUrl", "version", "fileSha256"]) if (p[f] !== undefined) out.push(`${at}: has ${f}`);
      const m = /^([^/]+)\/(.+):([^:/@]+)$/.exec(p.identifier);
      if (!m) out.push(`${at}: identifier is not registry/name:tag`);
      else {
        if (!allowedOCI.includes(m[1])) out.push(`${at}: registry ${m[1]} is not one the MCP registry accepts`);
        if (m[3] !== doc.version) out.push(`${at}: tag ${m[3]} is not the version ${doc.version}`);
      }
      const label = `LABEL io.modelcontextprotocol.server.name="${doc.name}"`;
      if (!readFileSync(join(repo, dockerfiles[server]), "utf8").includes(label)) {
        out.push(`${at}: ${dockerfiles[server]} lacks ${label}`);
      }
    } else {
      out.push(`${at}: not a package type this project publishes`);
    }
  }
  const manifest = JSON.parse(readFileSync(join(repo, "deploy/mcpb", server, "manifest.json"), "utf8"));
  if (doc.description !== manifest.description) out.push("description differs from the bundle manifest's");
  return out;
}

// Broken copies, each refused for the reason it names: by the schema, or by the registry's own rules.
const breakages = {
  "a name without a namespace": [(d) => (d.name = "goalbox-filesystem"), "schema: /name must match pattern"],
  "a description over 100 characters": [(d) => (d.description = "x".repeat(101)), "schema: /description must NOT have more than 100"],
  "a SHA-256 that is not one": [(d) => (mcpb(d).fileSha256 = "xyz"), "schema: /packages/0/fileSha256 must match pattern"],
  "an MCPB package without its SHA-256": [(d) => delete mcpb(d).fileSha256, "no fileSha256"],
  "an MCPB package outside a GitHub release": [(d) => (mcpb(d).identifier = "https://example.com/goalbox.mcpb"), "not a GitHub release asset"],
  "an OCI package with a version field": [(d) => (oci(d).version = d.version), "has version"],
  "an OCI image on a registry the MCP registry refuses": [
    (d) => (oci(d).identifier = oci(d).identifier.replace(/^[^/]+/, "registry.example.com")),
    "is not one the MCP registry accepts",
  ],
  "a version range": [(d) => (d.version = "^1.0.0"), "is a range"],
  "an image without the server's label": [(d) => (d.name = d.name + "-renamed"), "lacks LABEL io.modelcontextprotocol.server.name"],
};
const mcpb = (d) => d.packages.find((p) => p.registryType === "mcpb");
const oci = (d) => d.packages.find((p) => p.registryType === "oci");

let failed = 0;
for (const file of files) {
  const doc = JSON.parse(readFileSync(file, "utf8"));
  const server = String(doc.name).replace(/^.*\/goalbox-/, "");
  if (!dockerfiles[server]) {
    console.log(`registry: FAIL ${file}: ${doc.name} is not one of this project's servers`);
    failed++;
    continue;
  }
  const found = problems(doc, server);
  if (found.length) {
    console.log(`registry: FAIL ${file} (${doc.name} ${doc.version}):\n  ${found.join("\n  ")}`);
    failed++;
  } else {
    console.log(`registry: ok   ${file}: ${doc.name} ${doc.version} valid against ${schema.$id}, its MCPB and OCI packages as the registry requires`);
  }
  for (const [what, [breakIt, reason]] of Object.entries(breakages)) {
    const copy = structuredClone(doc);
    breakIt(copy);
    const refused = problems(copy, server);
    if (!refused.some((p) => p.includes(reason))) {
      console.log(`registry: FAIL ${file} with ${what} is not refused for it: ${refused.join("; ") || "valid"}`);
      failed++;
    }
  }
}
for (const file of files) {
  if (!(await runImage(JSON.parse(readFileSync(file, "utf8"))))) failed++;
}
if (failed) process.exit(1);
console.log(`registry: ${files.length} server.json files valid, and each of ${Object.keys(breakages).length} broken copies of each refused`);

// runImage starts the OCI package the way a registry client would (docker run, the runtime arguments, the image,
// the package arguments) with the image of that Dockerfile built here, when there is one (the compose test builds
// goalbox/<server>:latest), and lists its tools over stdio with the TypeScript SDK; the image must carry the label.
// The registry's own image is not published yet: the local build stands in for it.
async function runImage(doc) {
  const server = String(doc.name).replace(/^.*\/goalbox-/, "");
  // GOALBOX_OCI_IMAGE_FILESYSTEM or _EXECUTOR names another local build.
  const image = process.env[`GOALBOX_OCI_IMAGE_${server.toUpperCase()}`] ?? `goalbox/${server}:latest`;
  const label = spawnSync("docker", ["image", "inspect", "--format", '{{index .Config.Labels "io.modelcontextprotocol.server.name"}}', image], { encoding: "utf8" });
  if (label.status !== 0) {
    console.log(`registry: skipped running the OCI package of ${doc.name}: no image ${image} here (the compose test builds it)`);
    return true;
  }
  if (label.stdout.trim() === "") {
    // An image built before the label was added (or from another checkout) is not this checkout's.
    console.log(`registry: skipped running the OCI package of ${doc.name}: ${image} has no io.modelcontextprotocol.server.name label (built from an older checkout?)`);
    return true;
  }
  if (label.stdout.trim() !== doc.name) {
    console.log(`registry: FAIL ${image} carries io.modelcontextprotocol.server.name=${JSON.stringify(label.stdout.trim())}, not ${doc.name}`);
    return false;
  }
  if (process.getuid() !== 0) {
    console.log(`registry: skipped running ${image}: the workspace must be owned by the image's user 10001, which takes root`);
    return true;
  }
  const ws = mkdtempSync(join(tmpdir(), "goalbox-oci-"));
  chownSync(ws, 10001, 10001);
  const p = doc.packages.find((q) => q.registryType === "oci");
  const args = ["run"];
  for (const a of [...p.runtimeArguments]) {
    args.push(a.name);
    // The executor's seccomp profile is a release asset beside the image: here the repository's.
    if (a.value !== undefined) args.push(a.value.replace("{workspace}", ws).replace("{seccomp_profile}", join(repo, "deploy/seccomp-executor.json")));
  }
  args.push(image);
  for (const a of p.packageArguments ?? []) {
    args.push(a.name);
    if (a.value !== undefined) args.push(a.value);
  }
  const client = new Client({ name: "goalbox-registry-check", version: "0" });
  try {
    await client.connect(new StdioClientTransport({ command: "docker", args, stderr: "ignore" }));
    const tools = (await client.listTools()).tools;
    const manifest = JSON.parse(readFileSync(join(repo, "deploy/mcpb", server, "manifest.json"), "utf8"));
    const want = manifest.tools.map((t) => t.name).sort();
    const got = tools.map((t) => t.name).sort();
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      console.log(`registry: FAIL ${image} run as the OCI package lists ${got.join(", ")}; the bundle's manifest names ${want.join(", ")}`);
      return false;
    }
    // One call that touches the mounted workspace: the file written, or the command's output of a file there.
    const call = server === "filesystem"
      ? { name: "sandbox_write_file", arguments: { path: "oci.txt", content: "from the OCI package\n" } }
      : { name: "sandbox_run_command", arguments: { command: "echo from the OCI package > oci.txt && cat oci.txt" } };
    const res = await client.callTool(call);
    const onDisk = readFileSync(join(ws, "oci.txt"), "utf8");
    if (res.isError || onDisk !== "from the OCI package\n") {
      console.log(`registry: FAIL ${image} run as the OCI package: ${call.name} gave ${JSON.stringify(res).slice(0, 400)}, the workspace holds ${JSON.stringify(onDisk)}`);
      return false;
    }
    console.log(`registry: ok   ${image} run as ${doc.name}'s OCI package (docker ${args.join(" ")}) serves its ${got.length} tools over stdio, and ${call.name} wrote into the mounted workspace`);
    return true;
  } catch (e) {
    console.log(`registry: FAIL ${image} run as the OCI package (docker ${args.join(" ")}): ${e.message}`);
    return false;
  } finally {
    await client.close().catch(() => {});
    rmSync(ws, { recursive: true, force: true });
  }
}
