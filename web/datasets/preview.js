// Datasets page: the preview of a dataset (GET /api/datasets/{id}/preview) as tables: the
// splits with a bar each, then episodes per split by study, environment and task, and the
// participants (pseudonymous agent ids) with their split.

import { el } from "../shared/api.js";

const SPLITS = ["train", "validation", "test"];
const pct = (x) => `${Math.round(x * 1000) / 10}%`;
const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const NUMERIC = new Set(["Asked", "Episodes", "Steps", "Participants"]);
const heads = (names) => el("thead", {}, el("tr", {},
  names.map((h) => el("th", { scope: "col", class: NUMERIC.has(h) ? "right" : undefined }, h))));

function splitsTable(out) {
  return el("table", { class: "table ds-splits", "aria-label": "Episodes per split" },
    heads(["Split", "Asked", "Episodes", "Share", "Steps", "Participants"]),
    el("tbody", {}, out.splits.map((s) => el("tr", { dataset: { split: s.split } },
      el("th", { scope: "row" }, s.split),
      el("td", { class: "right" }, pct(s.fraction)),
      el("td", { class: "right", dataset: { col: "episodes" } }, String(s.episodes)),
      el("td", {},
        el("span", { class: "ds-bar", role: "img", "aria-label": `${s.split}: ${s.episodes} episodes, ${pct(s.share)}` },
          el("span", { class: `ds-bar-fill ds-${s.split}`, style: { width: pct(s.share) } })),
        ` ${pct(s.share)}`),
      el("td", { class: "right" }, String(s.steps)),
      el("td", { class: "right" }, String(s.participants))))));
}

function countsTable(title, rows) {
  return el("table", { class: "table ds-counts", "aria-label": `Episodes per ${title}` },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, title[0].toUpperCase() + title.slice(1)),
      SPLITS.map((s) => el("th", { scope: "col", class: "right" }, s)),
      el("th", { scope: "col", class: "right" }, "Episodes"), el("th", { scope: "col", class: "right" }, "Steps"))),
    el("tbody", {}, rows.map((r) => el("tr", { dataset: { key: r.key } },
      el("th", { scope: "row" }, r.label),
      SPLITS.map((s) => el("td", { class: "right", dataset: { split: s } }, String(r.per_split[s]))),
      el("td", { class: "right" }, String(r.episodes)), el("td", { class: "right" }, String(r.steps))))));
}

function participantsTable(rows) {
  return el("table", { class: "table ds-counts", "aria-label": "Participants" },
    heads(["Participant (agent id)", "Split", "Episodes", "Steps"]),
    el("tbody", {}, rows.map((r) => el("tr", { dataset: { participant: r.participant } },
      el("td", {}, el("code", {}, r.participant)), el("td", { dataset: { col: "split" } }, r.split),
      el("td", { class: "right" }, String(r.episodes)), el("td", { class: "right" }, String(r.steps))))));
}

// a task's row says its relabel's instruction; the edits' effect in one line
const relabelled = (tasks) => tasks.map((t) => (t.relabel ? { ...t, label: `${t.label} → “${t.relabel}”` } : t));

function editsLine(edits) {
  if (!edits) return null;
  const parts = [];
  if (edits.excluded.length) {
    parts.push(`${count(edits.excluded.length, "episode")} excluded (${edits.excluded.map((x) => `${x.episode_id.slice(0, 8)}: ${x.reason}`).join("; ")})`);
  }
  if (edits.trimmed) parts.push(`${count(edits.trimmed, "episode")} trimmed (${count(edits.steps_trimmed, "step")} dropped)`);
  const tasks = Object.keys(edits.relabelled).length;
  if (tasks) parts.push(`${count(tasks, "task")} relabelled`);
  return parts.length ? el("p", { id: "preview-edits" }, `Edits: ${parts.join(", ")}.`) : null;
}

/** Draw ``out`` (the preview) of dataset ``name`` into ``box``. */
export function renderPreview(box, name, out) {
  const how = out.split_by === "none" ? "not split" : `split by ${out.split_by}, seed ${out.seed}`;
  box.replaceChildren(...[
    el("p", { id: "preview-summary" },
      el("strong", {}, name), `: ${count(out.episodes, "episode")}, ${count(out.steps, "step")}, ${count(out.participants, "participant")} (${how}).`),
    out.message ? el("p", { class: "alert", role: "status", id: "preview-message" }, out.message) : null,
    editsLine(out.edits),
    splitsTable(out),
    el("div", { class: "ds-grid" },
      el("section", { "aria-label": "Per study" }, el("h3", {}, "Per study"), countsTable("study", out.studies)),
      el("section", { "aria-label": "Per environment" }, el("h3", {}, "Per environment"), countsTable("environment", out.environments)),
      el("section", { "aria-label": "Per task" }, el("h3", {}, "Per task"), countsTable("task", relabelled(out.tasks)))),
    el("h3", {}, "Per participant"),
    el("p", { class: "muted small" }, "Pseudonymous agent ids, as exports write them; no participant is in two splits when split by participant."),
    participantsTable(out.by_participant),
  ].filter(Boolean));
}
