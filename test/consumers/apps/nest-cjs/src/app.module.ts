import { Module } from "@nestjs/common";
import { InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { NervaModule } from "@nerva/nestjs";
import { AppController } from "./app.controller";
import { HeaderGuard } from "./header.guard";

const runtime = new InProcessRuntime();
runtime.register("echo", async (input, ctx) => `${ctx.userId} asked: ${input.message}`);
runtime.register("story", async function* () {
  yield "Once ";
  yield "upon a time.";
});
const orchestrator = new Orchestrator({
  router: new RuleRouter({
    rules: [{ handler: "story", keywords: ["story"] }],
    defaultHandler: "echo",
  }),
  runtime,
});

@Module({
  imports: [NervaModule.forRoot({ orchestrator, runtime, requireAuth: true, timeoutSeconds: 30 })],
  controllers: [AppController],
  providers: [HeaderGuard],
})
export class AppModule {}
