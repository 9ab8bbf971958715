// RLDS Studio, study editor: the study's own fields (its kind, name, pause timeout,
// description, instructions) and what players are asked besides playing (narrating their
// episodes).

import { el } from "../shared/api.js";
import { fieldBox, getIn, inputField, markdownField, setIn, switchField, uid } from "./fields.js";
import { kindField } from "./feedback.js";

function textareaField(data, path, label, changed, rows = 2) {
  const id = uid("f");
  const area = el("textarea", { id, rows });
  area.value = getIn(data, path) ?? "";
  area.addEventListener("input", () => {
    setIn(data, path, area.value === "" ? undefined : area.value);
    changed();
  });
  return fieldBox(id, label, area, undefined, path);
}

/** The Study section of the form for ``data``; ``changed()`` after every edit; ``onKind(kind)``
 *  when the designer picks the other kind (``kindLocked``: a started study keeps its own). */
export function studySection(api, data, changed, { kindLocked = false, onKind } = {}) {
  const feedback = data.kind === "feedback";
  return el("section", { class: "form-section", "aria-labelledby": "study-fields-title" },
    el("h3", { id: "study-fields-title" }, "Study"),
    el("div", { class: "form-grid" },
      inputField(data, ["name"], "Study name", { required: true, onChange: changed }),
      inputField(data, ["pause_timeout_s"], "Pause timeout (s)", { kind: "number", min: 1, max: 86400, defaultValue: 300, onChange: changed,
        hint: "A pause longer than this abandons the episode." }),
      feedback ? null : switchField(data, ["narrate_episodes"], "Ask participants to narrate their episodes", { onChange: changed,
        hint: "After saving an episode, a participant is offered a short form that replays it, to write what they did over ranges of steps (they may skip it)." })),
    kindField(data, { locked: kindLocked, onKind }), // after the name: a new study's focus stays there
    textareaField(data, ["description"], "Description", changed),
    markdownField(api, data, ["instructions"], "Study instructions", { onChange: changed }));
}
