// The public surface is deliberate: the root entry's export list and what each package publishes
// are checked here, so that an addition (or a test file slipping into a tarball) is a visible
// change to this file, not an accident.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Every name (values and types) a module exports, as the compiler sees it. */
function exportsOf(file: string): string[] {
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const symbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (symbol === undefined) throw new Error(`cannot read the exports of ${file}`);
  return checker
    .getExportsOfModule(symbol)
    .map((s) => s.name)
    .sort();
}

// One name per line, so that a diff shows exactly what was added or removed.
const ROOT_EXPORTS = [
  "AgentHandler",
  "AgentInput",
  "AgentInputInit",
  "AgentKit",
  "AgentNodeOptions",
  "AgentResult",
  "AgentRuntime",
  "AgentStatus",
  "AnyNervaError",
  "Approval",
  "ApprovalStatus",
  "ApprovalStore",
  "AttributeValue",
  "Attributes",
  "Channel",
  "ChannelResponder",
  "ChannelResponderOptions",
  "ChannelSpec",
  "Checkpoint",
  "ChildOptions",
  "CircuitBreaker",
  "CircuitBreakerOptions",
  "CircuitPermit",
  "CircuitSnapshot",
  "CircuitState",
  "ClaimRequest",
  "ClaimedRun",
  "ClassifyOptions",
  "ClientRun",
  "ClientRunResult",
  "CompositeToolManager",
  "ContextEvent",
  "ContextKey",
  "DeclarativePolicyEngine",
  "DeclarativePolicyOptions",
  "DelegationPolicy",
  "DelegationRequest",
  "DeliveryInfo",
  "DiscoverFilter",
  "END",
  "ERROR_POLICY",
  "EdgeRouter",
  "EdgeSpec",
  "EmbedFunction",
  "EmbeddingRouter",
  "EmbeddingRouterOptions",
  "EnqueueOptions",
  "EnqueueOptionsSchema",
  "EntryPointInfo",
  "EntryPointSpec",
  "ErrorCode",
  "ErrorDetails",
  "ErrorDetailsByCode",
  "ErrorPolicy",
  "EventHandler",
  "EventLogLine",
  "EventsOptions",
  "ExecContext",
  "ExecContextOptions",
  "FINAL_EVENT_TYPES",
  "ForkOptions",
  "FormattedResponse",
  "FromWireOptions",
  "FunctionTool",
  "FunctionToolManager",
  "FunctionToolManagerOptions",
  "Graph",
  "GraphDefinition",
  "GraphDeps",
  "GraphErrorCode",
  "GraphExecutor",
  "GraphHost",
  "GraphHostOptions",
  "GraphNode",
  "GraphRun",
  "GraphSnapshot",
  "GraphStart",
  "GraphState",
  "HandleOptions",
  "HandlerDescription",
  "HandlerOptions",
  "HandlerReturn",
  "HealthStatus",
  "HybridRouter",
  "HybridRouterOptions",
  "InMemoryApprovalStore",
  "InMemoryMemoryStore",
  "InMemoryRegistry",
  "InMemoryRunStore",
  "InProcessRuntime",
  "InputNodeOptions",
  "InputRequest",
  "InputSizeLimitMiddleware",
  "InputSizeLimitOptions",
  "InvocationRecord",
  "InvocationRequest",
  "InvocationStats",
  "IsolationLevel",
  "JsonLinesTraceSink",
  "JsonLinesTraceSinkOptions",
  "JsonSchema",
  "JsonValue",
  "KitHandler",
  "LlmClassifyFunction",
  "LlmRouter",
  "LlmRouterOptions",
  "LeaseRef",
  "LineStream",
  "ListOptions",
  "LogFields",
  "LogRecord",
  "LoggingMiddleware",
  "LoggingMiddlewareOptions",
  "MIN_MAX_LENGTH",
  "Memory",
  "MemoryEventInit",
  "MemoryItem",
  "MemoryKind",
  "MemoryNamespace",
  "MemoryQuery",
  "MemoryRead",
  "MemoryReadResult",
  "MemoryRecall",
  "MemoryStore",
  "MemoryTraceSink",
  "MemoryTraceSinkOptions",
  "MemoryWrite",
  "MetricLabels",
  "MetricsMiddleware",
  "MetricsMiddlewareOptions",
  "Middleware",
  "MiddlewarePipeline",
  "MiddlewareStage",
  "NervaError",
  "NervaErrorOptions",
  "NewRun",
  "NodeContext",
  "NodeKind",
  "NodeOptions",
  "NoopPolicyEngine",
  "Orchestrator",
  "OrchestratorOptions",
  "OrchestratorResponse",
  "OrchestratorStream",
  "PartialAgentResult",
  "PassthroughResponder",
  "Permissions",
  "PermissionsInit",
  "PipelineStage",
  "PolicyAction",
  "PolicyDecision",
  "PolicyDocument",
  "PolicyDocumentInit",
  "PolicyDocumentSchema",
  "PolicyEffect",
  "PolicyEngine",
  "Reducer",
  "Reducers",
  "Registry",
  "RegistryEntry",
  "RegistryEntryInit",
  "RegistryKind",
  "RegistryOptions",
  "Responder",
  "ResumeOptions",
  "RetryOptions",
  "RetryOptionsSchema",
  "RetryPolicy",
  "RouteCandidate",
  "RouteResult",
  "RouteRule",
  "Router",
  "RuleRouter",
  "RuleRouterOptions",
  "RunContext",
  "RunError",
  "RunEvent",
  "RunEventType",
  "RunInput",
  "RunLease",
  "RunListQuery",
  "RunOutcome",
  "RunPage",
  "RunPause",
  "RunPaused",
  "RunQueue",
  "RunQueueOptions",
  "RunQueueOptionsSchema",
  "RunRecord",
  "RunStatus",
  "RunStore",
  "Runner",
  "RunnerOptions",
  "RunnerOptionsSchema",
  "RuntimeOptions",
  "Scope",
  "ScoredMemoryItem",
  "SessionState",
  "SharedState",
  "SharedStateOptions",
  "SharedStateView",
  "Span",
  "SpanKind",
  "SpanLogLine",
  "SpanParent",
  "SpanStatus",
  "SpanUsage",
  "StagePayloads",
  "StartSpanOptions",
  "StateSchema",
  "StateUpdate",
  "StreamSink",
  "SubscribeOptions",
  "TieredMemory",
  "TieredMemoryOptions",
  "ToWireOptions",
  "TokenUsage",
  "TokenUsageDelta",
  "ToolCallContext",
  "ToolInfo",
  "ToolManager",
  "ToolResult",
  "ToolStatus",
  "TraceDetail",
  "TraceDetailEvent",
  "TraceDetailSpan",
  "TraceParent",
  "TraceSink",
  "TraceStatus",
  "TraceStore",
  "TraceStoreOptions",
  "TraceSummary",
  "TriggerOptions",
  "TriggerSource",
  "TriggerSpec",
  "TurnRole",
  "UnrecoverableError",
  "UsageLogLine",
  "UsageMeter",
  "UsageMeterOptions",
  "UserUsage",
  "ValidationIssue",
  "WaitForInputOptions",
  "WaitOptions",
  "agentNode",
  "agentResult",
  "clientData",
  "clientError",
  "clientRun",
  "clientRunError",
  "clientRunEvent",
  "combineSinks",
  "createAgentInput",
  "decisionError",
  "defineGraph",
  "defineTool",
  "failureText",
  "fnNode",
  "formatSpanTree",
  "formatTraceparent",
  "inputNode",
  "isExecContext",
  "isFinalStatus",
  "isNervaError",
  "isSpan",
  "loadPolicyFile",
  "logFields",
  "memoryNamespace",
  "newRequestId",
  "newSpanId",
  "newTraceId",
  "parseAgentResult",
  "parseOrThrow",
  "parsePolicyDocument",
  "parsePolicyText",
  "parseTraceparent",
  "policyDelegation",
  "retryDelaySeconds",
  "stripMarkdown",
  "traceSinkErrors",
];

describe("@nerva/core root entry", () => {
  it("exports exactly the documented names (add to this list deliberately)", () => {
    expect(exportsOf(join(root, "packages/core/src/index.ts"))).toEqual([...ROOT_EXPORTS].sort());
  }, 60_000);

  it("leaves the worker protocol and the subprocess runtime to their subpaths", () => {
    const names = new Set(exportsOf(join(root, "packages/core/src/index.ts")));
    for (const name of ["SubprocessRuntime", "serveWorker", "FrameDecoder", "encodeFrame"]) {
      expect(names.has(name), name).toBe(false);
    }
    expect(exportsOf(join(root, "packages/core/src/runtime/subprocess/index.ts"))).toContain(
      "SubprocessRuntime",
    );
    expect(exportsOf(join(root, "packages/core/src/runtime/protocol/index.ts"))).toContain(
      "encodeFrame",
    );
  }, 60_000);
});

describe("Server-Sent Events", () => {
  it("one writer in @nerva/core/http, the reader in /testing, and bridges that add only glue", () => {
    const sse = (file: string) =>
      exportsOf(join(root, file)).filter((n) => /SSE|LastEvent|lastEvent/.test(n));
    expect(sse("packages/core/src/http/index.ts")).toEqual([
      "SSEEventSource",
      "SSEEventSourceOptions",
      "SSEMessage",
      "SSEOptions",
      "SSEOutcome",
      "createSSEEventSource",
      "lastEventSeq",
      "writeSSE",
    ]);
    expect(sse("packages/core/src/testing/index.ts")).toEqual([
      "ReadSSEOptions",
      "SSEEvent",
      "readSSEEvents",
    ]);
    expect(sse("packages/express/src/index.ts")).toEqual(["sendSSE"]);
    expect(sse("packages/fastify/src/index.ts")).toEqual(["sendSSE"]);
    expect(sse("packages/nestjs/src/index.ts")).toEqual(["sendSSE", "toSSEObservable"]);
  }, 60_000);
});

describe("published tarballs", () => {
  const packed = (pkg: string): string[] => {
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: join(root, "packages", pkg),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  };

  for (const pkg of ["core", "express", "fastify", "nestjs", "ai-sdk", "cli", "otel"]) {
    it(`@nerva/${pkg} carries no tests, test support or fixtures`, () => {
      const files = packed(pkg);
      expect(files).toContain("dist/commonjs/index.js");
      const leaked = files.filter((f) =>
        /\.test\.|\.test-d\.|\.test-support\.|\/fixtures\/|\/image\/(handlers|modules|app)\//.test(
          f,
        ),
      );
      expect(leaked).toEqual([]);
    }, 60_000);
  }

  it("@nerva/core still ships the container agent that containerAgentPath() points at", () => {
    expect(packed("core")).toContain("src/runtime/container/image/agent/agent.mjs");
  }, 60_000);
});
