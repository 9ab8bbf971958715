// RLDS Studio, study editor: the crowd settings (consent, assignment, codes and redirects,
// requirements, where participants come from, the inputs they may play with) and a table of which completion
// applies to whom, kept up to date as the designer types.

import { el } from "../shared/api.js";
import { checksField as checks, inputField, markdownField, selectField, switchField } from "./fields.js";

const INPUTS = [["keyboard", "Keyboard"], ["gamepad", "Gamepad"], ["touch", "Touch (on-screen buttons)"]];
const DEFAULT_INPUTS = ["keyboard", "gamepad"];
const PLATFORMS = [["prolific", "Prolific"], ["mturk", "MTurk"], ["direct", "Direct link or anonymous"]];
const PROLIFIC_COMPLETE = "app.prolific.com/submissions/complete"; // where the server sends them (shown, never loaded)

/** The crowd section of the form for ``data``; ``changed()`` after every edit. */
export function crowdSection(api, data, changed) {
  const path = (key) => ["crowd", key];
  const table = el("div", { id: "completion-table", role: "region", "aria-label": "Completion per platform" });
  const judged = data.kind === "feedback";
  const onChange = () => { renderCompletion(table, data.crowd || {}, judged); changed(); };
  const section = el("details", { class: "form-section" },
    el("summary", {}, "Crowd settings"),
    markdownField(api, data, path("consent"), "Consent text", { rows: 4, onChange,
      hint: "When set, participants must accept it before playing." }),
    el("div", { class: "form-grid" },
      selectField(data, path("assignment"), "Assignment", [["choice", "participants choose"], ["balanced", "balanced by the server"]],
        { defaultValue: "choice", onChange }),
      switchField(data, path("allow_anonymous"), "Allow anonymous participants", { onChange }),
      inputField(data, path("completion_code"), "Completion code", { onChange }),
      inputField(data, path("screenout_code"), "Screen-out code", { onChange }),
      inputField(data, path("completion_url"), "Completion URL", { onChange, hint: "{code} is replaced by the code." }),
      inputField(data, path("screenout_url"), "Screen-out URL", { onChange }),
      inputField(data, path("full_code"), "Study-full code", { onChange,
        hint: "For people the study filled up on before they finished (Prolific: a screen-out or no-code return). Empty: no code." }),
      inputField(data, path("full_url"), "Study-full URL", { onChange, hint: "MTurk workers always submit the HIT." }),
      // a feedback study's participants are done after their judgements (its section says how many)
      judged ? null : inputField(data, ["crowd", "requirements", "min_episodes"], "Required episodes", { kind: "int", min: 0, defaultValue: 0, onChange }),
      judged ? null : inputField(data, ["crowd", "requirements", "min_play_time_s"], "Required play time (s)", { kind: "number", min: 0, defaultValue: 0, onChange })),
    platformsField(data, onChange),
    judged ? null : inputsField(data, onChange), // judging needs no keyboard: any device judges
    el("h4", {}, "Completion per platform"),
    table);
  renderCompletion(table, data.crowd || {}, judged);
  return section;
}

/** ``crowd.inputs``: unset means keyboard and gamepad. */
const inputsField = (data, onChange) => checks(data, ["crowd", "inputs"], "Participants play with", INPUTS, DEFAULT_INPUTS,
  "A phone or tablet without a keyboard is told before consent that it cannot take part, unless Touch is ticked. " +
  "With Touch, a robot arm gets its touch pads and buttons (bound under Controls → Device…), and a game with at most 8 key bindings a button per binding; a phone is told before consent which games touch cannot play.", onChange);

/** ``crowd.platforms``: where participants come from (read by the pre-launch checklist). */
const platformsField = (data, onChange) => checks(data, ["crowd", "platforms"], "Participants come from", PLATFORMS, [],
  "Checked before activating: a Prolific study needs a completion code (or URL). Anyone holding the link can still join.", onChange);

const fill = (url, code) => url.replaceAll("{code}", encodeURIComponent(code));

/** What one outcome does for one platform, in words (the rules of server/services/crowd/codes.py and progress.py). */
function describe(platform, code, url, submit) {
  const withCode = code ? `code ${code}` : "no code";
  if (submit && platform === "mturk") return `submits the HIT (${withCode})`;
  if (url) return `sent to ${fill(url, code)} (${withCode} shown)`;
  if (platform === "prolific" && code) return `sent to Prolific's completion page with ${withCode} (${PROLIFIC_COMPLETE}?cc=${encodeURIComponent(code)})`;
  return code ? `${withCode} shown` : "no code: told they may close the page";
}


function renderCompletion(box, crowd, judged) {
  const outcomes = [
    ["Finished", crowd.completion_code || "", crowd.completion_url || "", true],
    ["Study full for them", crowd.full_code || "", crowd.full_url || "", true],
    [judged ? "Screened out (declined consent, or failed the gold questions)" : "Screened out (declined consent, or left on a device that cannot play)", crowd.screenout_code || "", crowd.screenout_url || "", false],
  ];
  box.replaceChildren(el("table", { class: "table completion-table" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Outcome"),
      PLATFORMS.map(([, name]) => el("th", { scope: "col" }, name)))),
    el("tbody", {}, outcomes.map(([what, code, url, submit]) => el("tr", {},
      el("th", { scope: "row" }, what),
      PLATFORMS.map(([platform]) => el("td", { "data-platform": platform }, describe(platform, code, url, submit))))))));
}
