// Episodes page: the filter form, read into the list's query, the API's filter body and the
// export's selection, and filled back from the URL (a deep link or a reload).

import { setTask } from "./tasks.js";

const $ = (id) => document.getElementById(id);

/** The filter fields as the list's query parameters (also the page URL's). */
export function filterParams() {
  const p = new URLSearchParams();
  document.querySelectorAll("#status-boxes input:checked").forEach((b) => p.append("status", b.value));
  [...$("f-env").selectedOptions].forEach((o) => p.append("env", o.value));
  const add = (key, id) => { const v = $(id).value.trim(); if (v) p.append(key, v); };
  add("participant", "f-participant"); add("tag", "f-tag"); add("exclude_tag", "f-exclude");
  for (const [key, id] of [["since", "f-since"], ["until", "f-until"]]) {
    if ($(id).value) p.append(key, new Date($(id).value).toISOString());
  }
  add("min_return", "f-min-return"); add("max_return", "f-max-return");
  // steps on screen are actions, as the list counts them; the API's are RLDS steps (one more)
  for (const [key, id] of [["min_steps", "f-min-steps"], ["max_steps", "f-max-steps"]]) {
    const v = $(id).value.trim();
    if (v) p.append(key, String(Number(v) + 1));
  }
  add("p99_over_ms", "f-p99-over");
  const idle = $("f-idle-over").value.trim();  // a percentage on screen, a share in the API
  if (idle) p.append("idle_over", String(Number(idle) / 100));
  add("under_median", "f-under-median"); add("over_median", "f-over-median");
  if ($("f-tests").checked) p.append("include_tests", "true");
  document.querySelectorAll("#outcome-boxes input:checked").forEach((b) => p.append("outcome", b.value));
  if ($("f-excluded").value) p.append("excluded", $("f-excluded").value);
  document.querySelectorAll("#replay-boxes input:checked").forEach((b) => p.append("replay_verdict", b.value));
  if ($("f-task").value) p.append("task", $("f-task").value);  // a task id, or "-": no task
  return p;
}

// URL/API parameter -> filter field (the idle share is shown as a percentage)
const NUMBER_FIELDS = [["min_return", "f-min-return"], ["max_return", "f-max-return"],
                       ["p99_over_ms", "f-p99-over"], ["under_median", "f-under-median"],
                       ["over_median", "f-over-median"]];
const STEP_FIELDS = [["min_steps", "f-min-steps"], ["max_steps", "f-max-steps"]]; // actions on screen

/** Fill the filter fields from the URL's parameters ``p``. */
export function fillFilters(p) {
  const statuses = p.getAll("status");
  document.querySelectorAll("#status-boxes input").forEach((b) => { b.checked = statuses.includes(b.value); });
  const envs = p.getAll("env");
  [...$("f-env").options].forEach((o) => { o.selected = envs.includes(o.value); });
  for (const [key, id] of [["participant", "f-participant"], ["tag", "f-tag"], ["exclude_tag", "f-exclude"],
                           ...NUMBER_FIELDS]) {
    $(id).value = p.get(key) ?? "";
  }
  for (const [key, id] of STEP_FIELDS) $(id).value = p.has(key) ? String(Math.max(Number(p.get(key)) - 1, 0)) : "";
  $("f-idle-over").value = p.has("idle_over") ? String(Math.round(Number(p.get("idle_over")) * 1000) / 10) : "";
  for (const [key, id] of [["since", "f-since"], ["until", "f-until"]]) {
    const v = p.get(key);
    // datetime-local wants local time without a zone
    $(id).value = v ? new Date(new Date(v).getTime() - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 16) : "";
  }
  $("f-tests").checked = p.get("include_tests") === "true";
  const outcomes = p.getAll("outcome");
  document.querySelectorAll("#outcome-boxes input").forEach((b) => { b.checked = outcomes.includes(b.value); });
  $("f-excluded").value = ["true", "false"].includes(p.get("excluded")) ? p.get("excluded") : "";
  const verdicts = p.getAll("replay_verdict");
  document.querySelectorAll("#replay-boxes input").forEach((b) => { b.checked = verdicts.includes(b.value); });
  setTask($("f-task"), p.get("task"));
}

/** The filter fields as the API's filter body (no status: every status, as the list shows). */
export function pageFilter() {
  const p = filterParams();
  return {
    statuses: p.getAll("status"),
    environments: p.getAll("env"), participants: p.getAll("participant"),
    tags: p.getAll("tag"), exclude_tags: p.getAll("exclude_tag"),
    since: p.get("since"), until: p.get("until"),
    ...Object.fromEntries(NUMBER_FIELDS.map(([key]) => [key, p.has(key) ? Number(p.get(key)) : null])),
    idle_over: p.has("idle_over") ? Number(p.get("idle_over")) : null,
    include_tests: p.has("include_tests"),
    outcomes: p.getAll("outcome"),
    excluded: p.has("excluded") ? p.get("excluded") === "true" : null,
    replay_verdicts: p.getAll("replay_verdict"),
    task: p.get("task"),
  };
}

/** The export's selection of the filter: no status exports completed episodes only;
 *  excluded episodes only when the export form asks for them. */
export function filterSelection() {
  const { excluded, ...f } = pageFilter();
  return { ...f, statuses: f.statuses.length ? f.statuses : ["completed"],
           include_excluded: $("ex-include-excluded").checked || excluded === true };
}
