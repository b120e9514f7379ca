// The official MCP TypeScript SDK client signing in to postgram-server
// with OAuth 2.1, driven line by line by e2e/oauth_test.go:
//
//   stdout  AUTHORIZE <url>     the SDK discovered the server, registered
//                               and built the authorization URL (PKCE S256)
//   stdin   CODE <code>         the code the consent page sent back
//   stdout  CALLED <json>       tool calls with the access token
//   stdin   AGAIN               (after the test revoked the access token)
//   stdout  CALLED <json>       the SDK refreshed its tokens and called again
//
// Usage: node client.mjs SERVER_URL REDIRECT_URL
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [server, redirect] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => (await lines.next()).value ?? "";

class MemoryProvider {
  constructor() { this.info = undefined; this.tok = undefined; this.verifier = ""; }
  get redirectUrl() { return redirect; }
  get clientMetadata() {
    return { client_name: "SDK e2e client", redirect_uris: [redirect], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none", scope: "read write" };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.tok; }
  saveTokens(t) { this.tok = t; }
  redirectToAuthorization(url) { console.log("AUTHORIZE " + url.toString()); }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

const provider = new MemoryProvider();
const endpoint = new URL(server + "/mcp");

async function connect() {
  const client = new Client({ name: "postgram-e2e", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
  return client;
}

let client;
try {
  client = await connect();
  throw new Error("connected without signing in");
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
}
const answer = await next();
if (!answer.startsWith("CODE ")) throw new Error("expected CODE, got " + answer);
await new StreamableHTTPClientTransport(endpoint, { authProvider: provider }).finishAuth(answer.slice(5));
client = await connect();

async function calls(tag) {
  const tools = await client.listTools();
  const stored = await client.callTool({ name: "store", arguments: { type: "memory", content: "OAuth e2e note " + tag, tags: ["oauth-e2e"] } });
  const found = await client.callTool({ name: "search", arguments: { query: "OAuth e2e note " + tag } });
  console.log("CALLED " + JSON.stringify({ tools: tools.tools.map((t) => t.name), stored: stored.isError ? null : stored.content[0].text,
    found: found.content[0].text, refresh: provider.tok?.refresh_token ?? "" }));
}
await calls("one");
if ((await next()) !== "AGAIN") throw new Error("expected AGAIN");
await calls("two");
await client.close();
process.exit(0);
