// Front end of notebook_kit's CodeEditor widget: CodeMirror 6 under anywidget.
//
// Model traits (Python side: notebook_kit/notebook/ui/code_editor.py): value, language,
// error_line, error_message, read_only, height, placeholder. Only `value` is written from
// here, debounced. The custom messages {event: "save"} (Mod-s) and {event: "run"} (Mod-Enter)
// carry the text too: ipywidgets holds back a model update while an earlier one awaits the
// kernel, but sends a custom message at once, so an update alone could arrive after it.
//
// Nothing here touches the DOM at module top level: the bundle must import under plain Node.

import { closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import {
  HighlightStyle,
  bracketMatching,
  indentOnInput,
  indentUnit,
  syntaxHighlighting,
} from "@codemirror/language";
import {
  Annotation,
  Compartment,
  EditorState,
  Prec,
  RangeSet,
  StateEffect,
  StateField,
} from "@codemirror/state";
import {
  Decoration,
  EditorView,
  GutterMarker,
  drawSelection,
  gutter,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
  placeholder,
} from "@codemirror/view";
import { tags as t } from "@lezer/highlight";

const SYNC_DELAY_MS = 150;

/** Marks transactions that apply a value coming from Python, so they are not echoed back. */
const fromModel = Annotation.define();

// -- error marker: one line, in its own gutter and highlighted --------------------------------

const setError = StateEffect.define();

class ErrorMarker extends GutterMarker {
  constructor(message, spacer = false) {
    super();
    this.message = message;
    this.spacer = spacer; // the gutter's invisible width-setter: no class, no tooltip
  }
  eq(other) {
    return other.message === this.message && other.spacer === this.spacer;
  }
  toDOM() {
    const span = document.createElement("span");
    span.textContent = "\u25cf";
    if (!this.spacer) {
      span.className = "cm-nk-error-marker";
      span.title = this.message || "error";
    }
    return span;
  }
}

const errorLineDeco = Decoration.line({ class: "cm-nk-error-line" });
const noError = { markers: RangeSet.empty, lines: Decoration.none };

/** Decorations for 1-based `line`; none for 0 or a line past the end of the document. */
function errorDecorations(doc, line, message) {
  if (!(line >= 1 && line <= doc.lines)) return noError;
  const from = doc.line(line).from;
  return {
    markers: RangeSet.of([new ErrorMarker(message).range(from)]),
    lines: Decoration.set([errorLineDeco.range(from)]),
  };
}

const errorField = StateField.define({
  create: () => noError,
  update(value, tr) {
    let next = tr.docChanged
      ? { markers: value.markers.map(tr.changes), lines: value.lines.map(tr.changes) }
      : value;
    for (const effect of tr.effects) {
      if (effect.is(setError)) {
        next = errorDecorations(tr.state.doc, effect.value.line, effect.value.message);
      }
    }
    return next;
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.lines),
});

const errorGutter = gutter({
  class: "cm-nk-error-gutter",
  markers: (view) => view.state.field(errorField).markers,
  initialSpacer: () => new ErrorMarker("", true),
});

// -- look: JupyterLab's CSS variables, with fallbacks, so light and dark themes both read --

const highlightStyle = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.operatorKeyword, t.definitionKeyword, t.moduleKeyword],
    color: "var(--jp-mirror-editor-keyword-color, #008000)", fontWeight: "bold" },
  { tag: [t.bool, t.null, t.self], color: "var(--jp-mirror-editor-keyword-color, #008000)" },
  { tag: [t.string, t.special(t.string)], color: "var(--jp-mirror-editor-string-color, #ba2121)" },
  { tag: t.comment, color: "var(--jp-mirror-editor-comment-color, #3d7a7a)", fontStyle: "italic" },
  { tag: t.number, color: "var(--jp-mirror-editor-number-color, #080)" },
  { tag: [t.operator, t.derefOperator], color: "var(--jp-mirror-editor-operator-color, #aa22ff)" },
  { tag: [t.function(t.definition(t.variableName)), t.definition(t.className)],
    color: "var(--jp-mirror-editor-def-color, #0000ff)" },
  { tag: [t.standard(t.variableName), t.className],
    color: "var(--jp-mirror-editor-builtin-color, #008000)" },
  { tag: t.meta, color: "var(--jp-mirror-editor-meta-color, #aa22ff)" },
  { tag: t.propertyName, color: "var(--jp-mirror-editor-property-color, #0055aa)" },
  { tag: [t.punctuation, t.bracket], color: "var(--jp-mirror-editor-punctuation-color, #0055aa)" },
  { tag: t.variableName, color: "var(--jp-mirror-editor-variable-color, inherit)" },
  { tag: t.invalid, color: "var(--jp-mirror-editor-error-color, #f00)" },
]);

const theme = EditorView.theme({
  // "&.cm-editor": JupyterLab's own `.cm-editor { border: 0 }` would win over a lone "&"
  "&.cm-editor": {
    fontSize: "var(--jp-code-font-size, 13px)",
    color: "var(--jp-content-font-color1, rgba(0, 0, 0, 0.87))",
    backgroundColor: "var(--jp-layout-color0, #fff)",
    border: "var(--jp-border-width, 1px) solid var(--jp-border-color1, #bdbdbd)",
    borderRadius: "2px",
  },
  "&.cm-editor.cm-focused": { outline: "1px solid var(--jp-brand-color1, #1976d2)" },
  ".cm-scroller": {
    fontFamily: "var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace)",
    lineHeight: "var(--jp-code-line-height, 1.4)",
    overflow: "auto",
  },
  ".cm-content": { caretColor: "var(--jp-editor-cursor-color, var(--jp-ui-font-color0, #000))" },
  ".cm-cursor, .cm-dropCursor": {
    borderLeftColor: "var(--jp-editor-cursor-color, var(--jp-ui-font-color0, #000))",
  },
  ".cm-selectionBackground": {
    backgroundColor: "var(--jp-editor-selected-background, rgba(128, 128, 128, 0.3))",
  },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground": {
    backgroundColor: "var(--jp-editor-selected-focused-background, rgba(33, 150, 243, 0.3))",
  },
  ".cm-gutters": {
    backgroundColor: "var(--jp-layout-color1, #f7f7f7)",
    color: "var(--jp-content-font-color2, rgba(0, 0, 0, 0.54))",
    borderRight: "1px solid var(--jp-border-color2, #e0e0e0)",
  },
  ".cm-activeLine": { backgroundColor: "rgba(128, 128, 128, 0.1)" },
  ".cm-activeLineGutter": {
    backgroundColor: "rgba(128, 128, 128, 0.15)",
    color: "var(--jp-content-font-color1, rgba(0, 0, 0, 0.87))",
  },
  "&.cm-focused .cm-matchingBracket": {
    backgroundColor: "rgba(128, 128, 128, 0.25)",
    outline: "1px solid rgba(128, 128, 128, 0.6)",
  },
  "&.cm-focused .cm-nonmatchingBracket": { backgroundColor: "rgba(255, 0, 0, 0.25)" },
  ".cm-placeholder": { color: "var(--jp-content-font-color3, rgba(0, 0, 0, 0.38))" },
  ".cm-nk-error-line": { backgroundColor: "rgba(244, 67, 54, 0.16)" },
  ".cm-nk-error-gutter .cm-gutterElement": { padding: "0 2px", cursor: "default" },
  ".cm-nk-error-marker": { color: "var(--jp-error-color1, #d32f2f)" },
});

/** The change turning `before` into `after` that keeps their common start and end, so the
 * cursor, the selection and undo history stay put when Python edits part of the text. */
function minimalChange(before, after) {
  let start = 0;
  const shortest = Math.min(before.length, after.length);
  while (start < shortest && before[start] === after[start]) start++;
  let end = 0;
  while (
    end < shortest - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  ) {
    end++;
  }
  return { from: start, to: before.length - end, insert: after.slice(start, after.length - end) };
}

function languageExtension(name) {
  return name === "python" ? python() : []; // anything else: plain text
}

function readOnlyExtension(readOnly) {
  return [EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)];
}

// -- anywidget entry point ----------------------------------------------------------------

function render({ model, el }) {
  el.classList.add("nk-code-editor");
  // JupyterLab must not treat the editor's keys as notebook shortcuts (Ctrl+Enter runs the
  // cell, Ctrl+S saves the notebook, ...): lumino skips elements with this attribute.
  el.dataset.lmSuppressShortcuts = "true";

  const language = new Compartment();
  const readOnly = new Compartment();
  const placeholderText = new Compartment();
  let timer = null;

  const flush = () => {
    clearTimeout(timer);
    timer = null;
    const text = view.state.doc.toString();
    if (text !== model.get("value")) {
      model.set("value", text);
      model.save_changes();
    }
  };
  const sendEvent = (event) => () => {
    flush();
    model.send({ event, value: view.state.doc.toString() }); // Python takes this text first
    return true;
  };

  const view = new EditorView({
    parent: el,
    state: EditorState.create({
      doc: model.get("value"),
      extensions: [
        Prec.highest(
          keymap.of([
            { key: "Mod-s", run: sendEvent("save") },
            { key: "Mod-Enter", run: sendEvent("run") },
          ]),
        ),
        lineNumbers(),
        errorGutter,
        errorField,
        highlightActiveLineGutter(),
        highlightSpecialChars(),
        history(),
        drawSelection(),
        indentOnInput(),
        indentUnit.of("    "),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
        syntaxHighlighting(highlightStyle),
        theme,
        language.of(languageExtension(model.get("language"))),
        readOnly.of(readOnlyExtension(model.get("read_only"))),
        placeholderText.of(placeholder(model.get("placeholder"))),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged || update.transactions.some((tr) => tr.annotation(fromModel))) {
            return;
          }
          clearTimeout(timer);
          timer = setTimeout(flush, SYNC_DELAY_MS);
        }),
        EditorView.domEventHandlers({ blur: () => { if (timer !== null) flush(); } }),
      ],
    }),
  });
  view.dom.style.height = model.get("height");
  view.dom.cmView = view; // for browser tests: el.querySelector(".cm-editor").cmView

  const showError = () =>
    view.dispatch({
      effects: setError.of({ line: model.get("error_line"), message: model.get("error_message") }),
    });
  const handlers = {
    "change:value": () => {
      const value = model.get("value");
      const doc = view.state.doc.toString();
      if (value === doc) return;
      clearTimeout(timer); // Python's text wins over a pending, not yet sent edit
      timer = null;
      view.dispatch({ changes: minimalChange(doc, value), annotations: fromModel.of(true) });
      showError(); // the error line refers to the new text
    },
    "change:language": () =>
      view.dispatch({ effects: language.reconfigure(languageExtension(model.get("language"))) }),
    "change:read_only": () =>
      view.dispatch({ effects: readOnly.reconfigure(readOnlyExtension(model.get("read_only"))) }),
    "change:placeholder": () =>
      view.dispatch({ effects: placeholderText.reconfigure(placeholder(model.get("placeholder"))) }),
    "change:height": () => {
      view.dom.style.height = model.get("height");
      view.requestMeasure();
    },
    "change:error_line": showError,
    "change:error_message": showError,
  };
  for (const [name, handler] of Object.entries(handlers)) model.on(name, handler);
  showError();

  return () => {
    if (timer !== null) flush();
    for (const [name, handler] of Object.entries(handlers)) model.off(name, handler);
    view.destroy();
  };
}

export default { render };
