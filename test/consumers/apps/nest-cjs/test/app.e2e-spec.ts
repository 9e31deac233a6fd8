import { Test, type TestingModule } from "@nestjs/testing";
import type { INestApplication } from "@nestjs/common";
import request from "supertest";
import { AppModule } from "../src/app.module";

describe("AppController (e2e)", () => {
  let app: INestApplication;

  beforeEach(async () => {
    const moduleFixture: TestingModule = await Test.createTestingModule({
      imports: [AppModule],
    }).compile();
    app = moduleFixture.createNestApplication();
    await app.init();
  });

  afterEach(async () => {
    await app.close();
  });

  it("/me answers with the caller's identity", () => {
    return request(app.getHttpServer())
      .get("/me")
      .set("Authorization", "User alice")
      .expect(200)
      .expect({ user: "alice", text: "alice asked: who am I" });
  });

  it("/me without a user is a 401 with the JSON error body", async () => {
    const res = await request(app.getHttpServer()).get("/me").expect(401);
    expect(res.body.error.code).toBe("UNAUTHENTICATED");
    expect(res.body.error.requestId).toBe(res.headers["x-request-id"]);
  });

  it("/story streams Server-Sent Events", async () => {
    const res = await request(app.getHttpServer())
      .get("/story")
      .set("Authorization", "User alice")
      .expect(200)
      .expect("content-type", /text\/event-stream/);
    expect(res.text).toContain("data: Once ");
    expect(res.text).toContain("data: upon a time.");
    expect(res.text).toContain("event: done");
  });
});
