// Public entry of @nerva/nestjs: the NestJS 11+ bridge (Express and Fastify platforms).

// Module and injection
export {
  NERVA_BRIDGE,
  NERVA_OPTIONS,
  NERVA_ORCHESTRATOR,
  NERVA_RUNTIME,
} from "./nerva.constants.js";
export { InjectOrchestrator, InjectRuntime, NervaModule } from "./nerva.module.js";
export type {
  NervaModuleAsyncOptions,
  NervaModuleOptions,
  NervaModuleSwitches,
  NervaOptionsFactory,
} from "./nerva.options.js";

// Request context
export { NervaCtx, nervaContextOf } from "./nerva-ctx.decorator.js";
export { NervaMiddleware } from "./nerva.middleware.js";

// Errors and streaming
export { NervaExceptionFilter } from "./nerva-exception.filter.js";
export { NervaResultInterceptor } from "./nerva-result.interceptor.js";
export { sendSSE, toSSEObservable } from "./sse.js";

// Chat routes of a useChat frontend (@nerva/core/ui-stream), through @Res()
export { chatResponse } from "./chat.js";
