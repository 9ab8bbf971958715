// A feedback study's results, as its designer reads them (docs/feedback.md): each judge's
// record in the participants list, the study's figures and the preference dataset's
// downloads. The participants page and the live dashboard both use them.

import { el } from "../shared/api.js";

/** A share 0..1 as a percentage ("–" when there is none yet). */
export const percent = (v) => (v === null || v === undefined ? "–" : `${Math.round(100 * v)}%`);

/** The three cells of a judge's row: judgements, gold (right of answered, accuracy), agreement. */
export function judgingCells(p) {
  const j = p.judging || { answered: 0, gold_answered: 0, gold_correct: 0, gold_accuracy: null, agreement: null };
  const gold = j.gold_answered
    ? el("span", { title: `${j.gold_correct} of ${j.gold_answered} gold answers right` },
      `${j.gold_correct} / ${j.gold_answered} `, el("span", { class: "muted" }, `(${percent(j.gold_accuracy)})`))
    : el("span", { class: "muted", title: "No gold answer yet" }, "–");
  const agree = j.agreement === null
    ? el("span", { class: "muted", title: "No item shared with another judge yet" }, "–")
    : el("span", { title: "Answers like the other judges of the same items" }, percent(j.agreement));
  return [el("td", { class: "right", "data-col": "judgements" }, String(j.answered)),
    el("td", { class: "right", "data-col": "gold" }, gold),
    el("td", { class: "right", "data-col": "agreement" }, agree)];
}

/** The preference dataset's two downloads; before any judgement, an empty state instead. */
export function downloads(study, answered) {
  if (!answered) {
    return el("div", { class: "empty pt-no-judgements" },
      el("p", { class: "empty-title" }, "No judgements yet"),
      el("p", { class: "muted" }, "The preference dataset can be downloaded once a participant has answered an item."));
  }
  const base = `/api/studies/${study}/feedback/preferences`;
  return el("div", { class: "toolbar" },
    el("a", { class: "btn btn-primary", href: `${base}.parquet`, download: "" }, "Download Parquet"),
    el("a", { class: "btn", href: `${base}.jsonl`, download: "" }, "Download JSONL"),
    el("span", { class: "muted small" }, `${answered} judgement${answered === 1 ? "" : "s"}, every one a row: `,
      el("code", {}, "pandas.read_parquet(\"preferences.parquet\")")));
}

function counts(pairs) {
  return pairs.flatMap(([name, value, title]) => [el("dt", { title: title || "" }, name),
    el("dd", { "data-count": name }, String(value))]);
}

/** The study's figures: judgements, quota, agreement, items per question, judges. */
export function figures(f) {
  const q = f.quota;
  const quota = q.total ? `${q.counted} / ${q.total}` : `${q.counted} (no quota)`;
  const people = f.participants;
  const list = el("dl", { class: "pt-figures" }, ...counts([
    ["judgements", f.answered, "Answered, gold included (designers' previews left out)"],
    ["gold answered", f.gold_answered],
    ["toward the quota", quota, "Non-gold judgements of real participants"],
    ["agreement", percent(f.agreement), `${f.pairs} pairs of judges of one item`],
    ["per minute (10 min)", f.rate_per_minute.toFixed(1)],
    ["source episodes", f.pool_episodes],
    ["judges", people.joined],
    ["screened out by gold", people.screened_out_gold],
  ]));
  const rows = f.questions.map((x) => el("tr", { "data-question": x.id },
    el("th", { scope: "row", title: x.prompt || "no longer asked" }, x.id),
    el("td", {}, x.kind || "–"),
    el("td", { class: "right" }, String(x.items)), el("td", { class: "right" }, String(x.gold_items)),
    el("td", { class: "right" }, String(x.answered)), el("td", { class: "right" }, String(x.gold_answered))));
  const table = el("table", { class: "table pt-questions", "aria-label": "Items and judgements per question" },
    el("thead", {}, el("tr", {}, ...["Question", "Kind", "Items", "Gold items", "Judgements", "Gold judgements"]
      .map((h, i) => el("th", { scope: "col", class: i > 1 ? "right" : "" }, h)))),
    el("tbody", {}, ...rows));
  return [list, table];
}
