// One chat with a Nerva agent through the AI SDK's useChat: streamed text, tool calls with their
// input and output, approval requests answered with Approve / Deny (the answer is sent at once:
// sendAutomaticallyWhen), a Stop button (the server's stop route cancels the run, then the
// client stops reading), and `resume: true` (a reload reconnects to the answer in progress).
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  getToolName,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { ToolCall } from "./tool-call.js";

/** Where the page keeps the chat's messages, so a reload shows them again before resuming. */
const storageKey = (chatId: string): string => `nerva-chat:${chatId}`;

function savedMessages(chatId: string): UIMessage[] {
  try {
    const saved = JSON.parse(sessionStorage.getItem(storageKey(chatId)) ?? "[]") as unknown;
    return Array.isArray(saved) ? (saved as UIMessage[]) : [];
  } catch {
    return [];
  }
}

export function Chat({ chatId, token }: { chatId: string; token: string | null }) {
  const headers = useMemo(
    (): Record<string, string> => (token === null ? {} : { authorization: `Bearer ${token}` }),
    [token],
  );
  const transport = useMemo(
    () => new DefaultChatTransport<UIMessage>({ api: "/api/chat", headers }),
    [headers],
  );
  const { messages, sendMessage, addToolApprovalResponse, stop, status, error } = useChat({
    id: chatId,
    messages: savedMessages(chatId),
    transport,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");

  useEffect(() => {
    sessionStorage.setItem(storageKey(chatId), JSON.stringify(messages));
  }, [chatId, messages]);

  const busy = status === "submitted" || status === "streaming";

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (input.trim() === "" || busy) return;
    void sendMessage({ text: input });
    setInput("");
  };

  const onStop = async () => {
    // With resumable streams a closed connection is not a stop: the server's stop route
    // cancels the run, whose stream then ends; stop() drops what the client still reads.
    await fetch(`/api/chat/${encodeURIComponent(chatId)}/stop`, { method: "POST", headers });
    await stop();
  };

  return (
    <main style={{ fontFamily: "system-ui, sans-serif", maxWidth: 720, margin: "2rem auto" }}>
      <h1 style={{ fontSize: "1.2rem" }}>Nerva chat</h1>
      <p data-testid="status">{status}</p>
      <ol data-testid="messages" style={{ listStyle: "none", padding: 0 }}>
        {messages.map((m) => (
          <li key={m.id} data-testid={`message-${m.role}`} data-message-id={m.id}>
            <strong>{m.role === "user" ? "You" : "Agent"}</strong>
            {m.parts.map((part, i) => {
              if (part.type === "text") {
                return (
                  <p key={i} data-testid="text" style={{ whiteSpace: "pre-wrap" }}>
                    {part.text}
                  </p>
                );
              }
              if (isToolUIPart(part)) {
                return (
                  <ToolCall
                    key={part.toolCallId}
                    name={getToolName(part)}
                    part={part}
                    onAnswer={(approved) => {
                      if (part.approval !== undefined) {
                        void addToolApprovalResponse({ id: part.approval.id, approved });
                      }
                    }}
                  />
                );
              }
              return null;
            })}
          </li>
        ))}
      </ol>
      {error !== undefined && <p data-testid="error">Something went wrong: {error.message}</p>}
      <form onSubmit={onSubmit} style={{ display: "flex", gap: "0.5rem" }}>
        <input
          data-testid="input"
          value={input}
          onChange={(e) => setInput(e.target.value)}
          placeholder="Say something"
          style={{ flex: 1 }}
        />
        <button type="submit" data-testid="send" disabled={busy}>
          Send
        </button>
        <button type="button" data-testid="stop" disabled={!busy} onClick={() => void onStop()}>
          Stop
        </button>
      </form>
    </main>
  );
}
