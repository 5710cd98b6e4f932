import { describe, expect, it } from "vitest";
import { counted } from "./words";

describe("counted", () => {
  it("says one in the singular and every other count in the plural", () => {
    expect(counted(1, "segment")).toBe("1 segment");
    expect(counted(0, "segment")).toBe("0 segments");
    expect(counted(2, "slot change")).toBe("2 slot changes");
    expect(counted(1, "cache boundary", "cache boundaries")).toBe("1 cache boundary");
    expect(counted(3, "cache boundary", "cache boundaries")).toBe("3 cache boundaries");
  });
});

