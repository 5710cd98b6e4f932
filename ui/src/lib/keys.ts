// The keyboard shortcuts of the frequent actions, as a pure function of the key event (tested
// with Vitest): Alt+1…Alt+9, Alt+0, Alt+- and Alt+= switch panels, Ctrl+F (or / outside a text field)
// searches the prompt, Ctrl+Enter goes to the player's message, Ctrl+Z outside a text field
// undoes the last turn or session edit, Esc cancels the running work (a turn appends nothing).
export type Shortcut = { kind: "tab"; index: number } | { kind: "search" } | { kind: "play" } | { kind: "undo" } | { kind: "cancel" };

interface KeyLike {
  key: string;
  code?: string;
  altKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  target: EventTarget | null;
}

function editable(target: EventTarget | null): boolean {
  const t = target as { tagName?: string; isContentEditable?: boolean; closest?: (s: string) => unknown } | null;
  if (!t) return false;
  if (t.isContentEditable) return true;
  const tag = t.tagName?.toUpperCase();
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return true;
  return !!t.closest?.(".cm-editor");
}

export function shortcut(e: KeyLike): Shortcut | null {
  const ctrl = e.ctrlKey || e.metaKey;
  if (e.altKey && !ctrl && !e.shiftKey) {
    const digit = /^Digit([0-9])$/.exec(e.code ?? "")?.[1] ?? (/^[0-9]$/.test(e.key) ? e.key : undefined);
    if (digit !== undefined) return { kind: "tab", index: digit === "0" ? 9 : Number(digit) - 1 };
    // The eleventh and twelfth panels: the keys after 0 on the row.
    if (e.code === "Minus" || e.key === "-") return { kind: "tab", index: 10 };
    if (e.code === "Equal" || e.key === "=") return { kind: "tab", index: 11 };
  }
  if (ctrl && !e.altKey && e.key.toLowerCase() === "f") return { kind: "search" };
  if (!ctrl && !e.altKey && e.key === "/" && !editable(e.target)) return { kind: "search" };
  if (ctrl && !e.altKey && e.key === "Enter") return { kind: "play" };
  if (ctrl && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "z" && !editable(e.target)) return { kind: "undo" };
  if (!ctrl && !e.altKey && e.key === "Escape") return { kind: "cancel" };
  return null;
}
