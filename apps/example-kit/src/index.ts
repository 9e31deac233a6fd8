// Public entry of @nerva/example-kit: what the Express, Fastify and NestJS example apps share, so
// each app's own files hold only its framework's wiring. Test suites: "@nerva/example-kit/testing".

// The service the apps are: configuration from the environment, its state (Redis or embedded),
// its policy, worker and route bodies
export { exampleConfigOf, type ExampleConfig } from "./config.js";
export { exampleBackend } from "./state.js";
export { createExampleService, examplePolicy, type ExampleService } from "./service.js";
export {
  EXAMPLE_ENDPOINTS,
  createExampleRoutes,
  type ExampleAppDeps,
  type ExampleRoutes,
  type RouteAnswer,
} from "./routes.js";
export {
  MCP_AGENTS,
  RUN_HANDLER,
  createExampleProtocols,
  type ExampleProtocols,
} from "./protocols.js";

// The demo agents and their orchestrator
export { createOrchestrator, type ExampleOrchestratorOptions } from "./agents.js";
export { MAX_COUNT, countAgent, pause, type ExampleLog } from "./count-agent.js";
export {
  createExampleOrchestrator,
  exampleModel,
  registerConcierge,
  type ExampleModel,
} from "./concierge.js";

// Dev JWT auth and the identity it gives a request
export { SESSION_ID, USER_NAME, createAuth, type DevAuth, type TokenClaims } from "./auth.js";
export { identityOf } from "./identity.js";

// The bodies of the apps' routes, checked after jsonBodyOf(req)
export {
  approvalDecisionOf,
  approvalIdOf,
  chatRequestOf,
  runIdOf,
  tokenRequestOf,
  TRAVELLER_ROLE,
} from "./requests.js";

// Start-up output and shutdown of the apps' entry points
export { printBanner, stopOnSignals } from "./startup.js";

// The trace viewer the apps mount with NERVA_TRACE_UI=1
export { traceUIFromEnv, type ExampleTraceUI } from "./trace-ui.js";

// OpenTelemetry export when OTEL_EXPORTER_OTLP_ENDPOINT is set
export { otelFromEnv, type ExampleOtel } from "./otel.js";
export { oneSink } from "./sinks.js";
