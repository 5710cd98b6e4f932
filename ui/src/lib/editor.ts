// The session file editor: CodeMirror 6 with YAML highlighting, its own undo history for the
// draft, and the loader's diagnostics as inline marks at their line and column.
import { EditorState, type Text } from "@codemirror/state";
import { EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { yaml } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics, type Diagnostic as Mark } from "@codemirror/lint";
import type { Diagnostic } from "./wire";

/** A studio diagnostic (1-based line and column) as a mark over the rest of its line. */
export function toMarks(doc: Text, diagnostics: Diagnostic[]): Mark[] {
  return diagnostics.map((d) => {
    const line = doc.line(Math.min(Math.max(d.line ?? 1, 1), doc.lines));
    const from = line.from + Math.min(Math.max((d.column ?? 1) - 1, 0), line.length);
    const to = Math.max(line.to, Math.min(from + 1, doc.length));
    return { from, to, severity: "error", source: d.code, message: d.message };
  });
}

export function createEditor(parent: HTMLElement, text: string, onChange: (text: string) => void): EditorView {
  return new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(),
        history(),
        highlightActiveLine(),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        yaml(),
        syntaxHighlighting(defaultHighlightStyle),
        lintGutter(),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ "aria-label": "Session file (YAML)" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
}

/** Replaces the editor's text (a structured edit, the file's text) as one undoable change. */
export function replaceText(view: EditorView, text: string) {
  const current = view.state.doc.toString();
  if (current === text) return;
  let start = 0;
  while (start < current.length && start < text.length && current[start] === text[start]) start++;
  let end = 0;
  while (end < current.length - start && end < text.length - start && current[current.length - 1 - end] === text[text.length - 1 - end]) end++;
  view.dispatch({ changes: { from: start, to: current.length - end, insert: text.slice(start, text.length - end) } });
}

export function showDiagnostics(view: EditorView, diagnostics: Diagnostic[]) {
  view.dispatch(setDiagnostics(view.state, toMarks(view.state.doc, diagnostics)));
}
