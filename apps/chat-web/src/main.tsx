// The page's entry: the chat named in the URL (`?chat=`, made up and written there when absent,
// so that a reload finds the same chat and resumes its answer) for the user whose token the URL
// carries (`?token=`, sent as a bearer token; the server decides who that is).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Chat } from "./chat.js";

const params = new URLSearchParams(window.location.search);
let chatId = params.get("chat");
if (chatId === null || !/^[A-Za-z0-9_-]{1,200}$/.test(chatId)) {
  chatId = `chat-${crypto.randomUUID()}`;
  params.set("chat", chatId);
  window.history.replaceState(null, "", `?${params.toString()}`);
}
const token = params.get("token");

const root = document.getElementById("root");
if (root === null) throw new Error("index.html has no #root element");
createRoot(root).render(
  <StrictMode>
    <Chat chatId={chatId} token={token} />
  </StrictMode>,
);
