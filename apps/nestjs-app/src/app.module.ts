import type { Orchestrator } from "@nerva/core";
import { NervaModule } from "@nerva/nestjs";
import { Module, type Type } from "@nestjs/common";
import { SESSION_ID, type DevAuth, type TokenClaims } from "./auth.js";
import { ChatController } from "./chat.controller.js";
import { DEV_AUTH, JwtAuthGuard } from "./jwt-auth.guard.js";
import { TokenController } from "./token.controller.js";

/** The example's root module, wired with an orchestrator and the JWT auth. */
export function createAppModule(options: { orchestrator: Orchestrator; auth: DevAuth }): Type {
  @Module({
    imports: [
      NervaModule.forRoot({
        orchestrator: options.orchestrator,
        requireAuth: true,
        timeoutSeconds: 30,
        // Identity comes from the verified token (the guard's request.user) only. The client may
        // pick a session id: memory keys sessions under the user.
        resolve: (request) => {
          const user = request.user as TokenClaims | undefined;
          if (user === undefined) return null;
          const session = request.headers["x-session-id"];
          return {
            userId: user.sub,
            roles: user.roles,
            sessionId: typeof session === "string" && SESSION_ID.test(session) ? session : user.sid,
          };
        },
      }),
    ],
    controllers: [TokenController, ChatController],
    providers: [{ provide: DEV_AUTH, useValue: options.auth }, JwtAuthGuard],
  })
  class AppModule {}
  return AppModule;
}
