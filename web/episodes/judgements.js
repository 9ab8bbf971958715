// Episodes page: what feedback studies' judgements say of each episode (docs/feedback.md):
// the list's Judgements cell (the summary the list carries) and the replay's Judgements
// panel (GET /api/episodes/{id}/judgements: each judgement of a clip of the episode). Study
// names, prompts, answers and participant ids are other people's text: set as text only.
import { el } from "../shared/api.js";

const $ = (id) => document.getElementById(id);
const OUTCOMES = { won: "preferred", lost: "not preferred", tie: "equally good", cant_tell: "can't tell" };
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : word.endsWith("s") ? "es" : "s"}`;

/** The summary in short ("3W 1L 1T · ★3.50 (2)", ``parts`` one per kind) and in words (its
 *  title); null: never judged. */
export function summaryText(s) {
  if (!s) return null;
  const parts = [];
  if (s.wins || s.losses || s.ties) parts.push(`${s.wins}W ${s.losses}L${s.ties ? ` ${s.ties}T` : ""}`);
  if (s.ratings) parts.push(`★${Number(s.mean_rating).toFixed(2)} (${s.ratings})`);
  const words = [plural(s.wins, "win"), plural(s.losses, "loss"), plural(s.ties, "tie")].join(", ")
    + (s.ratings ? `; mean rating ${Number(s.mean_rating).toFixed(2)} of ${plural(s.ratings, "rating")}` : "; no rating");
  return { short: parts.join(" · ") || "0", parts, words };
}

/** The list's Judgements cell of an episode (the page's one summary query): compare counts
 *  above the mean rating, so that the column stays narrow. */
export function judgementCell(e) {
  const text = summaryText(e.judgements);
  if (!text) return el("td", { class: "muted", title: "Not judged in a feedback study" }, "–");
  return el("td", { class: "ep-judged", title: `Judged in feedback studies: ${text.words}` },
    ...text.parts.map((part) => el("span", { class: "ep-judged-part" }, part)));
}

function answerText(j) {
  if (j.question_kind === "compare") return OUTCOMES[j.outcome] || "–";
  if (j.question_kind === "rate") return j.rating === null ? "–" : `rated ${j.rating}`;
  return j.text ? `“${j.text}”` : "–";
}

function judgementItem(j, show) {
  const steps = j.start === null ? null : j.start === j.end ? `step ${j.start}` : `steps ${j.start}–${j.end}`;
  const marks = [
    j.is_gold ? el("span", { class: "badge ep-gold", title: "A gold question: its answer was known" },
      j.correct === null ? "gold" : j.correct ? "gold ✓" : "gold ✗") : null,
    !j.counted ? el("span", { class: "badge ep-uncounted",
      title: "Not in the summary (gold, a test participant, or screened out)" }, "not counted") : null,
  ];
  return el("li", { class: `ep-judgement ep-judgement-${j.outcome || j.question_kind}`, "data-id": String(j.id) },
    el("div", {}, el("strong", { class: "ep-judgement-answer" }, answerText(j)), " ", ...marks),
    el("div", { class: "small" }, j.question || j.question_id),
    el("div", { class: "muted small" },
      el("span", { class: "code" }, j.participant), ` · ${new Date(j.answered_at).toLocaleString()} · `,
      j.study_name, j.other_episode ? ` · beside ${j.other_episode}` : ""),
    steps ? el("button", { class: "btn-link small", type: "button", title: "Show the judged clip's first step",
                           onclick: () => show(j.start) }, steps) : null);
}

/** The replay's Judgements panel: ``api`` as the page has it; ``show(step)`` moves the
 *  replay to a step (a judged clip's first). */
export function createJudgements({ api, show }) {
  let current = null;

  async function open(ep) {
    current = ep.id;
    $("judgement-summary").textContent = "loading…";
    $("judgements").replaceChildren();
    $("judgements-empty").hidden = true;
    const got = await api("GET", `/api/episodes/${encodeURIComponent(ep.id)}/judgements`);
    if (current !== ep.id) return;  // another episode was opened meanwhile
    const text = summaryText(got.summary);
    $("judgement-summary").textContent = text ? text.short : "";
    $("judgement-summary").title = text ? text.words : "";
    $("judgements").replaceChildren(...got.items.map((j) => judgementItem(j, show)));
    if (got.more) $("judgements").append(el("li", { class: "muted small" }, "Only the newest 500 are listed."));
    $("judgements-empty").hidden = got.items.length > 0;
  }

  function close() { current = null; }

  return { open, close };
}
