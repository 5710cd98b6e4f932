import { describe, expect, it } from "vitest";
import { StudioError } from "./backend";
import { fakeBackend } from "./fake-backend";

describe("a failed command", () => {
  it("is a StudioError with the studio's code and the message the author reads", async () => {
    const backend = fakeBackend();
    const failure = await backend.turnPrompt("turn-99").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StudioError);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as StudioError).code).toBe("unknown-turn");
    expect((failure as StudioError).message).toBe("`turn-99` is not a played turn");
  });
});
