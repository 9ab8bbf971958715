// RLDS Studio, study editor: a feedback study's source, the recorded episodes its items are
// cut from: the designer's own play studies (each with the count of its episodes that match)
// and the episodes page's filters (environments, task, statuses, outcomes, tags). Counts and
// lists come from the episodes list (GET /api/studies/{id}/episodes), filtered as
// server/services/feedback/items.pool filters: kept episodes of at least one step, no test plays.

import { el } from "../shared/api.js";
import { checksField, fieldBox, getIn, inputField, setIn, uid } from "./fields.js";

const STATUSES = [["completed", "Completed"], ["rejected", "Rejected"], ["canceled", "Canceled"], ["abandoned", "Abandoned"]];
const OUTCOMES = [["success", "Success"], ["failure", "Failure"], ["unset", "Not said"]];
const LISTED = 200; // episodes listed per source study for the gold items' pickers
const SRC = ["feedback", "source"];

/** A play study of the list (GET /api/studies): a feedback study has no environments. */
const isPlay = (study) => (study.kind ?? (study.environments.length ? "play" : "feedback")) === "play";

/** The designer's play studies (not ``selfId``, the study being edited). */
export async function playStudies(api, selfId) {
  const all = await api("GET", "/api/studies");
  return all.filter((s) => isPlay(s) && s.id !== selfId);
}

/** The episodes-list query of ``source`` (the spec's ``feedback.source``) for one study. */
function query(source, limit) {
  const q = new URLSearchParams({ limit: String(limit), excluded: "false", min_steps: "1" });
  for (const s of source.statuses?.length ? source.statuses : ["completed"]) q.append("status", s);
  for (const e of source.environments || []) q.append("env", e);
  for (const o of source.outcomes || []) q.append("outcome", o);
  for (const t of source.tags || []) q.append("tag", t);
  for (const t of source.exclude_tags || []) q.append("exclude_tag", t);
  if (source.task) q.set("task", source.task);
  return q.toString();
}

/**
 * The matching episodes of each study of ``ids``: {counts: Map(id → total or null when it
 * could not be read), episodes: [EpisodeSummary…] (up to LISTED of each study of ``source``,
 * the others only counted)}.
 */
export async function sourceEpisodes(api, source, ids) {
  const counts = new Map();
  const episodes = [];
  const picked = new Set(source.studies || []);
  await Promise.all(ids.map(async (id) => {
    try {
      const page = await api("GET", `/api/studies/${id}/episodes?${query(source, picked.has(id) ? LISTED : 1)}`);
      counts.set(id, page.total);
      if (picked.has(id)) episodes.push(...page.items);
    } catch {
      counts.set(id, null); // a filter the list refuses (the server names it on save)
    }
  }));
  return { counts, episodes };
}

/** Comma-separated words bound to the list at ``path`` (empty: the key unset). */
function wordsField(data, path, label, hint, onChange) {
  const id = uid("f");
  const input = el("input", { id, type: "text", autocomplete: "off", placeholder: "none" });
  input.value = (getIn(data, path) || []).join(", ");
  input.addEventListener("input", () => {
    const words = input.value.split(",").map((w) => w.trim()).filter(Boolean);
    setIn(data, path, words.length ? words : undefined);
    onChange();
  });
  return fieldBox(id, label, input, hint, path);
}

const plural = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;

/**
 * The source part of the feedback section. ``ctx``: ``studies`` (play studies, null while
 * loading), ``counts`` (Map id → matching episodes), ``onChange()`` after an edit of the
 * source (the counts and the gold pickers follow).
 */
export function sourcePart(data, ctx) {
  const source = getIn(data, SRC);
  const edit = () => ctx.onChange(); // a filter edited: counted again, nothing redrawn
  const picked = new Set(source.studies || []);
  const studiesBox = el("fieldset", { class: "field inputs-field fb-sources", dataset: { path: "feedback.source.studies" } },
    el("legend", {}, "Source studies"));
  if (ctx.studies === null) {
    studiesBox.append(el("p", { class: "muted small" }, "Loading your studies…"));
  } else if (!ctx.studies.length) {
    studiesBox.append(el("p", { class: "empty-title small", id: "no-source-studies" },
      "You have no play study yet: create one, collect episodes, then judge them here."));
  }
  for (const study of ctx.studies || []) {
    const id = uid("src");
    const box = el("input", { id, type: "checkbox", value: String(study.id) });
    box.checked = picked.has(study.id);
    box.addEventListener("change", () => {
      const ids = (ctx.studies || []).map((s) => s.id).filter((sid) => sid === study.id ? box.checked : picked.has(sid));
      // ids the list does not show (another owner's, deleted) stay for the server to name
      const unknown = (source.studies || []).filter((sid) => !ctx.studies.some((s) => s.id === sid));
      source.studies = [...unknown, ...ids];
      ctx.onChange(true);
    });
    studiesBox.append(el("label", { class: "check", for: id }, box, ` ${study.name} `,
      el("span", { class: "muted small", dataset: { count: study.id } })));
  }
  studiesBox.append(el("p", { class: "muted small hint", id: "fb-source-total", role: "status" }));
  const envs = [...new Map((ctx.studies || []).filter((s) => picked.has(s.id))
    .flatMap((s) => s.environments.map((e) => [e.env_key, e.name]))).entries()];
  const chosen = source.environments || [];
  for (const key of chosen) if (!envs.some(([k]) => k === key)) envs.push([key, key]);
  const envField = envs.length
    ? checksField(data, [...SRC, "environments"], "Environments to judge", envs, [], "None ticked: all of them.", edit)
    : el("p", { class: "muted small", dataset: { path: "feedback.source.environments" } }, "Environments to judge: pick a source study to choose among its environments.");
  const part = el("div", { class: "fb-part" },
    el("h4", {}, "Episodes to judge"),
    studiesBox,
    envField,
    el("div", { class: "form-grid" },
      inputField(data, [...SRC, "task"], "Task", { onChange: edit, hint: "A task id: only episodes that drew it. Empty: any task." }),
      wordsField(data, [...SRC, "tags"], "With tags", "Comma-separated: episodes with all of them.", edit),
      wordsField(data, [...SRC, "exclude_tags"], "Without tags", "Comma-separated: episodes with none of them.", edit)),
    checksField(data, [...SRC, "statuses"], "Episode statuses", STATUSES, ["completed"], "Unchanged: completed episodes only.", edit),
    checksField(data, [...SRC, "outcomes"], "Outcomes", OUTCOMES, [], "None ticked: any outcome (the reviewer's, else the player's).", edit));
  showCounts(part, data, ctx.counts);
  return part;
}

/** Each study's count of matching episodes, and their sum over the picked studies, in ``part``. */
export function showCounts(part, data, counts) {
  const picked = new Set(getIn(data, [...SRC, "studies"]) || []);
  for (const span of part.querySelectorAll("[data-count]")) {
    const id = Number(span.dataset.count);
    const count = counts.get(id);
    span.textContent = `(#${id} · ${!counts.has(id) ? "counting…" : count === null ? "cannot count" : plural(count, "episode")} to judge)`;
  }
  const total = [...picked].reduce((sum, id) => sum + (counts.get(id) || 0), 0);
  part.querySelector("#fb-source-total").textContent = (picked.size
    ? `${plural(total, "episode")} to judge with these filters.` : "Tick the play studies whose recorded episodes are judged.")
    + " Counts follow the filters below (kept episodes only, no test plays).";
}
