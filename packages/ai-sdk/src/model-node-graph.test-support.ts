// The graph of the model node crash test, shared by the test (which triggers and waits) and the
// worker processes (which run it).
import { END, defineGraph } from "@nerva/core";
import { z } from "zod";
import { modelNode, type ModelNodeAnswer, type NervaModel } from "./index.js";

export const AskState = z.object({ question: z.string(), answer: z.string().optional() });
type AskState = z.output<typeof AskState>;

/** One model node; `onAnswer` runs after the model's answer is committed, before the state update. */
export function askOnceGraph(model: NervaModel, onAnswer: (answer: ModelNodeAnswer) => void) {
  return defineGraph({
    name: "ask_once",
    state: AskState,
    nodes: {
      ask: modelNode<AskState>({
        model,
        tools: false,
        prompt: (s) => s.question,
        reads: ["question"],
        writes: "answer",
        output: (answer) => {
          onAnswer(answer);
          return { answer: answer.text };
        },
      }),
    },
    edges: [["ask", END]],
    entry: "ask",
  });
}
