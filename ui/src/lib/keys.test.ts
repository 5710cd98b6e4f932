import { describe, expect, it } from "vitest";
import { shortcut } from "./keys";

const key = (k: Partial<Parameters<typeof shortcut>[0]>) => shortcut({ key: "", altKey: false, ctrlKey: false, metaKey: false, shiftKey: false, target: null, ...k });

describe("keyboard shortcuts", () => {
  it("Alt+- and Alt+= reach the eleventh and twelfth panels", () => {
    expect(key({ key: "-", code: "Minus", altKey: true })).toEqual({ kind: "tab", index: 10 });
    expect(key({ key: "=", code: "Equal", altKey: true })).toEqual({ kind: "tab", index: 11 });
  });
  it("Esc asks to cancel the running work, even from a text field", () => {
    expect(key({ key: "Escape" })).toEqual({ kind: "cancel" });
    expect(key({ key: "Escape", target: { tagName: "INPUT" } as unknown as EventTarget })).toEqual({ kind: "cancel" });
    expect(key({ key: "Escape", ctrlKey: true })).toBeNull();
  });
  it("switch panels with Alt+digit", () => {
    expect(key({ key: "1", code: "Digit1", altKey: true })).toEqual({ kind: "tab", index: 0 });
    expect(key({ key: "0", code: "Digit0", altKey: true })).toEqual({ kind: "tab", index: 9 });
    expect(key({ key: "1" })).toBeNull();
  });
  it("search with Ctrl+F, or / outside a text field", () => {
    expect(key({ key: "f", ctrlKey: true })).toEqual({ kind: "search" });
    expect(key({ key: "/" })).toEqual({ kind: "search" });
    expect(key({ key: "/", target: { tagName: "INPUT" } as unknown as EventTarget })).toBeNull();
  });
  it("play with Ctrl+Enter and undo with Ctrl+Z outside text fields", () => {
    expect(key({ key: "Enter", ctrlKey: true })).toEqual({ kind: "play" });
    expect(key({ key: "Enter" })).toBeNull();
    expect(key({ key: "z", ctrlKey: true })).toEqual({ kind: "undo" });
    expect(key({ key: "z", ctrlKey: true, target: { tagName: "TEXTAREA" } as unknown as EventTarget })).toBeNull();
    expect(key({ key: "z", ctrlKey: true, target: { tagName: "DIV", closest: (s: string) => (s === ".cm-editor" ? {} : null) } as unknown as EventTarget })).toBeNull();
  });
});
