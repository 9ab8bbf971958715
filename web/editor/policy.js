// RLDS Studio, study editor: an environment's shared autonomy (``policy``): one of the
// policies this server has installed (``GET /api/policies``: ids only, nothing a designer
// types is imported) drives until the participant presses a control, and drives again
// ``takeover.release_delay_s`` after they let go (docs/study-format.md, "Shared autonomy").

import { el } from "../shared/api.js";
import { fieldBox, setIn, uid } from "./fields.js";

let installed = null; // the server's policies, asked once per page (a promise)

function loadPolicies(api) {
  if (!installed) {
    installed = api("GET", "/api/policies").catch((error) => {
      installed = null; // asked again next time
      throw error;
    });
  }
  return installed;
}

const DELAY = { min: 0, max: 10, fallback: 1 };

/**
 * The section's body for ``env`` (edited in place); ``onChange()`` after each edit, ``problems``
 * the server's messages ({loc, msg}) about ``policy`` (shown at their field).
 */
export function policyEditor(api, env, problems, onChange) {
  const selectId = uid("policy");
  const delayId = uid("delay");
  const select = el("select", { id: selectId }, el("option", { value: "" }, "None: the participant drives"));
  const about = el("p", { class: "muted small hint", "aria-live": "polite" });
  const delay = el("input", { id: delayId, type: "number", min: String(DELAY.min), max: String(DELAY.max), step: "0.1",
    autocomplete: "off", placeholder: `${DELAY.fallback} (default)` });
  delay.value = env.policy?.takeover?.release_delay_s ?? "";
  const messages = (field) => problems.filter(({ loc }) => loc.includes("policy") && loc[loc.length - 1] === field).map((p) => p.msg);
  const note = (input, field) => {
    const lines = messages(field);
    if (!lines.length) return null;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", `${input.id}-problem`);
    return el("p", { class: "field-problem", id: `${input.id}-problem`, role: "alert" }, lines.join(" "));
  };
  const delayProblem = (value) => (value === "" || (Number.isFinite(Number(value)) && value >= DELAY.min && value <= DELAY.max)
    ? null : `Release delay must be from ${DELAY.min} to ${DELAY.max} seconds.`);
  const localNote = el("p", { class: "field-problem", id: `${delayId}-local`, role: "alert", hidden: "" });
  const refusedDelay = note(delay, "release_delay_s"); // the last save's, gone once edited
  const refusedPolicy = note(select, "id");

  let policies = [];
  const show = () => {
    const chosen = env.policy?.id ?? "";
    const known = policies.find((p) => p.id === chosen);
    about.textContent = !chosen
      ? (policies.length ? "Pick a policy to let it drive until the participant takes over."
        : "No policy is installed on this server: the participant always drives. The operator installs policies (docs/runtime.md, “Policies”).")
      : known ? `${known.description ?? "No description."} (${known.origin})`
        : "This policy is not installed on this server: the study cannot be activated with it.";
    delay.disabled = !chosen;
  };
  const fill = () => {
    const chosen = env.policy?.id ?? "";
    const ids = policies.map((p) => p.id);
    select.replaceChildren(select.options[0],
      ...policies.map((p) => el("option", { value: p.id }, p.id)),
      chosen && !ids.includes(chosen) ? el("option", { value: chosen }, `${chosen} (not installed here)`) : null);
    select.value = chosen;
    show();
  };

  select.addEventListener("change", () => {
    if (!select.value) setIn(env, ["policy"], undefined);
    else setIn(env, ["policy", "id"], select.value);
    if (!select.value) delay.value = "";
    refusedPolicy?.remove();
    select.removeAttribute("aria-invalid");
    show();
    onChange();
  });
  delay.addEventListener("input", () => {
    const raw = delay.value.trim();
    const value = raw === "" ? undefined : Number(raw);
    setIn(env, ["policy", "takeover", "release_delay_s"], value);
    const problem = delay.validity.badInput ? "Type a number of seconds." : delayProblem(raw === "" ? "" : value);
    refusedDelay?.remove();
    localNote.hidden = !problem;
    localNote.textContent = problem ?? "";
    if (problem) {
      delay.setAttribute("aria-invalid", "true");
      delay.setAttribute("aria-describedby", localNote.id);
    } else {
      delay.removeAttribute("aria-invalid");
      delay.removeAttribute("aria-describedby");
    }
    onChange();
  });

  fill();
  loadPolicies(api).then((list) => {
    policies = list;
    fill();
  }).catch((error) => {
    about.textContent = `The installed policies could not load: ${error.message}`;
  });

  return el("div", { class: "form-grid policy-grid" },
    el("div", {}, fieldBox(selectId, "Policy", select), refusedPolicy, about),
    el("div", {}, fieldBox(delayId, "Takeover release delay (s)", delay,
      "After the participant lets go of every control, the policy drives again this long later (0–10 s)."),
    refusedDelay, localNote));
}
