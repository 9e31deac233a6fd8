// Entry point of `@nerva/ai-sdk/testing`: a deterministic model and a local OpenAI-compatible
// server, for tests, examples and benchmarks that must not reach a real provider.
export {
  FLIGHT_RULES,
  scriptedModel,
  type ScriptRule,
  type ScriptedModelOptions,
} from "./scripted-model.js";
export {
  FakeOpenAIServer,
  type FakeOpenAIServerOptions,
  type FakeReply,
  type FakeRequest,
  type FakeResponder,
} from "./fake-openai-server.js";
