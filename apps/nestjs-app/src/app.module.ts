import type { TraceSink } from "@nerva/core/tracing";
import { NervaModule } from "@nerva/nestjs";
import { Module, type Type } from "@nestjs/common";
import { identityOf, type ExampleAppDeps, type TokenClaims } from "@nerva/example-kit";
import { ChatController } from "./chat.controller.js";
import { DEV_AUTH, JwtAuthGuard } from "./jwt-auth.guard.js";
import { EXAMPLE_PROTOCOLS, ProtocolsController } from "./protocols.controller.js";
import { EXAMPLE_ROUTES, ServiceController } from "./service.controller.js";
import { TokenController } from "./token.controller.js";

/**
 * The example's root module, wired with the orchestrator, the service's routes, its protocol
 * endpoints and the JWT auth.
 */
export function createAppModule(
  options: ExampleAppDeps & {
    /** Told of every request's spans and events (e.g. the trace viewer's store). */
    traceSink?: TraceSink | undefined;
  },
): Type {
  @Module({
    imports: [
      NervaModule.forRoot({
        orchestrator: options.orchestrator,
        requireAuth: true,
        timeoutSeconds: 30,
        // Identity comes from the verified token (the guard's request.user) only; the client may
        // pick one of its own sessions.
        resolve: (request) =>
          identityOf(request.user as TokenClaims | undefined, request.headers["x-session-id"]),
        traceSink: options.traceSink,
      }),
    ],
    controllers: [TokenController, ChatController, ServiceController, ProtocolsController],
    providers: [
      { provide: DEV_AUTH, useValue: options.auth },
      { provide: EXAMPLE_ROUTES, useValue: options.routes },
      { provide: EXAMPLE_PROTOCOLS, useValue: options.protocols },
      JwtAuthGuard,
    ],
  })
  class AppModule {}
  return AppModule;
}
