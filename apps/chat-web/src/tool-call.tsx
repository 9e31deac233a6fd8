// A tool call as the AI SDK's UI message shows it: its name, state, input, output (or error,
// or denial), and Approve / Deny while it waits for the user's approval.
import type { DynamicToolUIPart, ToolUIPart } from "ai";

const json = (value: unknown): string => JSON.stringify(value, null, 2) ?? "";

export function ToolCall({
  name,
  part,
  onAnswer,
}: {
  name: string;
  part: ToolUIPart | DynamicToolUIPart;
  onAnswer: (approved: boolean) => void;
}) {
  return (
    <section
      data-testid="tool"
      data-tool={name}
      data-state={part.state}
      style={{ border: "1px solid #ccc", borderRadius: 4, padding: "0.5rem", margin: "0.5rem 0" }}
    >
      <div>
        Tool <code data-testid="tool-name">{name}</code> <em>{part.state}</em>
      </div>
      <pre data-testid="tool-input">{json(part.input)}</pre>
      {part.state === "output-available" && (
        <pre data-testid="tool-output">{json(part.output)}</pre>
      )}
      {part.state === "output-error" && <p data-testid="tool-error">{part.errorText}</p>}
      {part.state === "output-denied" && <p data-testid="tool-denied">Denied</p>}
      {part.state === "approval-requested" && (
        <div>
          <button type="button" data-testid="approve" onClick={() => onAnswer(true)}>
            Approve
          </button>{" "}
          <button type="button" data-testid="deny" onClick={() => onAnswer(false)}>
            Deny
          </button>
        </div>
      )}
    </section>
  );
}
