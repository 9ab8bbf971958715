// RLDS Studio, study editor: an environment's controls. A placeholder showing the controls
// read-only until the controls editor (binding keys and gamepad inputs) replaces this module
// with the same export.

import { el } from "./api.js";

/**
 * Show the controls of one environment in ``container``: ``controls`` (the study's own,
 * null when it keeps the catalog's) or else ``defaults``; ``actions`` and ``meanings`` come
 * from validation when known. ``onChange(controls)`` is never called here.
 */
export function mountControlsEditor(container, { actions, meanings, controls, defaults, onChange }) {
  void onChange;
  const shown = controls ?? defaults ?? null;
  container.replaceChildren(
    el("p", { class: "muted small" },
      controls ? "This study's own controls:" : "The catalog's default controls (edit them in YAML):",
      meanings?.length ? ` actions ${meanings.join(", ")}.` : actions ? ` ${actions}.` : ""),
    shown
      ? el("pre", { class: "code controls-json" }, JSON.stringify(shown, null, 2))
      : el("p", { class: "muted small" }, "No controls known: validate to see the actions."),
  );
  return () => container.replaceChildren();
}
