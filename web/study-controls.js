// The study panel's controls editors: after Validate, one editor under each environment that
// built (its action space and names are then known), editing the YAML text of the panel.
// (The form editor will mount web/editor-controls.js on its own state instead.)

import { el } from "./api.js";
import { mountControlsEditor } from "./editor-controls.js";
import { dump, load } from "./vendor/js-yaml/js-yaml.esm.min.mjs";

function parse(text) {
  try {
    const spec = load(text);
    return spec && Array.isArray(spec.environments) ? spec : null;
  } catch {
    return null;
  }
}

function envOf(spec, report) {
  return spec.environments.find((env) => env && env.id === report.id) ?? null;
}

/**
 * Mount a controls editor in each report element of ``box`` (in the order of ``reports``),
 * reading and writing the environment's ``controls`` in ``textarea``'s YAML.
 */
export function mountStudyControls(box, reports, textarea) {
  if (textarea.readOnly) return;
  reports.forEach((report, index) => {
    const article = box.children[index];
    if (!article || !report.action_space) return;
    const spec = parse(textarea.value);
    const env = spec && envOf(spec, report);
    const status = el("p", { class: "muted small", role: "status" });
    const holder = el("div");
    article.append(el("section", { class: "controls-section", "aria-label": `Controls of ${report.name}` },
      el("h5", {}, "Controls"), holder, status));
    mountControlsEditor(holder, {
      actions: report.action_space,
      meanings: report.action_meanings,
      controls: env ? env.controls ?? null : null,
      defaults: report.default_controls,
      onChange: (controls) => {
        const current = parse(textarea.value);
        const target = current && envOf(current, report);
        if (!target) {
          status.textContent = "The YAML cannot be read or has no such environment: fix it, then bind again.";
          return;
        }
        target.controls = controls;
        textarea.value = dump(current, { lineWidth: 100 });
        status.textContent = "The YAML below is updated: save to keep it.";
      },
    });
  });
}
