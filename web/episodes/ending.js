// Episodes page: how an episode ended, in words, for its list row and its replay.

import { el } from "../shared/api.js";

// what the environment reported at the episode's last step (info is_success: env_outcome)
const REPORTED = { success: "task done", failure: "task not done" };
const REPORTED_TITLE = "What the environment reported at the episode's last step (is_success)";

/** Who ended the episode and what its environment reported ("ended by participant · task
 *  done"); "" while it records. */
export function endingText(e) {
  const parts = e.ended_by ? [`ended by ${e.ended_by.replace("_", " ")}`] : [];
  if (REPORTED[e.env_outcome]) parts.push(REPORTED[e.env_outcome]);
  return parts.join(" · ");
}

/** The list row's note under the status badge (none while recording). */
export function endingNote(e) {
  const text = endingText(e);
  return text ? el("span", { class: "ep-ending muted small", title: e.env_outcome ? REPORTED_TITLE : undefined }, text) : null;
}
