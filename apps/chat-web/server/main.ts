// `pnpm --filter @nerva/chat-web start` (after the build): the demo server on PORT (default
// 3000), its runs in CHAT_DB (default chat-web.db), printing the page's address with a token
// for the user `demo` (a customer, who may approve their own refunds).
import { startChatWebServer } from "./demo-server.js";

const server = await startChatWebServer({
  dbPath: process.env["CHAT_DB"] ?? "chat-web.db",
  port: Number(process.env["PORT"] ?? 3000),
});
const { token } = await server.auth.mint("demo", ["customer"]);
console.log(`Chat page: ${server.url}/?token=${token}`);
process.once("SIGTERM", () => void server.close().then(() => process.exit(0)));
process.once("SIGINT", () => void server.close().then(() => process.exit(0)));
