// The AG-UI route in a Nest controller, through `@Res()` and `chatResponse`, on the Express and the
// Fastify platform, checked by the shared suite with @ag-ui/client's own HttpAgent.
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import type { ExecContext } from "@nerva/core";
import type { AgUiRoute } from "@nerva/core/ag-ui";
import { describeAgUiBridge } from "@nerva/core/testing";
import { Body, Controller, Inject, Module, Post, Res } from "@nestjs/common";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { NervaCtx, NervaModule, chatResponse } from "./index.js";

const AGENT = Symbol("AGENT");
const GRAPH = Symbol("GRAPH");

@Controller("ag-ui")
class AgUiController {
  constructor(
    @Inject(AGENT) private readonly agent: AgUiRoute,
    @Inject(GRAPH) private readonly graph: AgUiRoute,
  ) {}

  @Post()
  run(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return this.agent.run({ body, ctx, ...chatResponse(res) });
  }

  @Post("graph")
  runGraph(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return this.graph.run({ body, ctx, ...chatResponse(res) });
  }
}

for (const platform of ["express", "fastify"] as const) {
  describeAgUiBridge(`a Nest controller (${platform})`, async ({ agent, graph }) => {
    @Module({
      imports: [
        NervaModule.forRoot({
          resolve: (req) => ({
            userId: (req.headers["x-test-user"] as string | undefined) ?? null,
          }),
        }),
      ],
      controllers: [AgUiController],
      providers: [
        { provide: AGENT, useValue: agent },
        { provide: GRAPH, useValue: graph },
      ],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication(
      platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
      { logger: false },
    );
    await app.listen(0, "127.0.0.1");
    return {
      url: `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`,
      close: () => app.close(),
    };
  });
}
