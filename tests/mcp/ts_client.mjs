// An independent MCP client: the official TypeScript SDK over stdio
// (StdioClientTransport), driving `gitvault mcp` as any Node host would.
// argv: <node_modules dir> <python> <vault>. Prints one JSON object.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, python, vault] = process.argv.slice(2);
const sdk = (rel) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", rel)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { ResultSchema } = await sdk("types.js");

const transport = new StdioClientTransport({
  command: python, args: ["-m", "gitvault", "mcp"], cwd: vault, env: process.env, stderr: "inherit",
});
const client = new Client({ name: "ts-probe", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const text = (r) => JSON.parse(r.content[0].text);
const search = await client.callTool({ name: "skill_search", arguments: { query: "flaky test" } });
out.search = { isError: !!search.isError, data: text(search) };
const empty = await client.callTool({ name: "skill_search", arguments: { query: "" } });
out.empty = { isError: !!empty.isError, data: text(empty) };
const ctx = await client.callTool({ name: "skill_context", arguments: { prompt: "a flaky test" } });
const injection = text(ctx).injection;
const outcome = await client.callTool({ name: "skill_outcome", arguments: { injection, success: true } });
out.outcome = text(outcome);
const listing = await client.request({ method: "skills/list", params: {} }, ResultSchema.passthrough());
out.skills = listing;
const first = listing.skills[0];
const got = await client.request({ method: "skills/get", params: { uri: first.uri } }, ResultSchema.passthrough());
out.get = got;
out.files = {};
for (const res of first.resources) {
  const read = await client.readResource({ uri: res.uri });
  out.files[res.uri] = read.contents[0].text;
}
await client.close();
process.stdout.write(JSON.stringify(out));
