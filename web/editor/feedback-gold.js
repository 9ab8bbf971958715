// RLDS Studio, study editor: a feedback study's gold items (an item with a known answer,
// mixed in at the gold rate and never shown as such): the question, one or two episodes of
// the source picked from the list of its episodes, the clips' first steps when the study
// cuts clips, and the answer a careful participant gives (compare: A, B or equally good;
// rate: a range of ratings); then the rate and the screening threshold.

import { el } from "../shared/api.js";
import { fieldBox, inputField, uid } from "./fields.js";

const ANSWERS = [["a", "A is better"], ["b", "B is better"], ["equal", "Equally good"]];

/** The gold items' questions: those with a known answer (narrate has none). */
const judgeable = (fb) => (fb.questions || []).filter((q) => q.kind === "compare" || q.kind === "rate");

/** "c0a1b2c3 · cartpole · task · 57 steps · player-1 · success" (the full id as its title). */
function episodeText(ep, names) {
  const bits = [ep.id.slice(0, 8), ep.env_key, ep.task_key, `${ep.steps} steps`, ep.participant, ep.outcome || "no outcome"];
  if (names.size > 1) bits.splice(1, 0, names.get(ep.study_id) || `study ${ep.study_id}`);
  return bits.filter(Boolean).join(" · ");
}

/** A select of the source's episodes for ``gold.episodes[slot]`` (an id not listed is kept). */
function episodePicker(gold, slot, label, ctx, onChange) {
  const id = uid("gold-ep");
  const current = gold.episodes?.[slot] || "";
  const names = new Map((ctx.studies || []).map((s) => [s.id, s.name]));
  const listed = ctx.episodes.some((ep) => ep.id === current);
  const select = el("select", { id },
    el("option", { value: "" }, ctx.episodes.length ? "Choose an episode…" : "No episodes to choose from yet"),
    current && !listed ? el("option", { value: current }, `${current.slice(0, 8)}… (not among the source's episodes)`) : null,
    ctx.episodes.map((ep) => el("option", { value: ep.id, title: ep.id }, episodeText(ep, names))));
  select.value = current;
  select.addEventListener("change", () => {
    const episodes = [...(gold.episodes || [])];
    episodes[slot] = select.value;
    gold.episodes = episodes.map((e) => e ?? "");
    onChange();
  });
  return fieldBox(id, label, select, slot === 0 && !ctx.episodes.length
    ? "Pick source studies with recorded episodes first: their episodes are listed here." : undefined,
  ["feedback", "gold", ctx.index, "episodes", slot]);
}

/** ``gold.starts[slot]``: the list has one start per episode (0 where none is typed) or is unset. */
function startField(gold, slot, count, label, path, onChange) {
  const id = uid("gold-start");
  const input = el("input", { id, type: "number", min: 0, step: "1", placeholder: "0 (default)", autocomplete: "off" });
  input.value = gold.starts?.[slot] ?? "";
  input.addEventListener("input", () => {
    const starts = Array.from({ length: count }, (_, i) => gold.starts?.[i] ?? 0);
    const raw = input.value.trim();
    starts[slot] = raw === "" ? 0 : Number.isFinite(Number(raw)) ? Number(raw) : raw;
    if (starts.every((v) => v === 0) && raw === "") delete gold.starts;
    else gold.starts = starts;
    onChange();
  });
  return fieldBox(id, label, input, undefined, path);
}

/** The known answer of a compare gold item: A, B or equally good (radio buttons). */
function answerField(gold, index, onChange) {
  const name = uid("gold-answer");
  return el("fieldset", { class: "field inputs-field", dataset: { path: `feedback.gold.${index}.answer` } },
    el("legend", {}, "Known answer"),
    ANSWERS.map(([value, label]) => {
      const id = uid("gold-a");
      const radio = el("input", { id, type: "radio", name, value });
      radio.checked = gold.answer === value;
      radio.addEventListener("change", () => { if (radio.checked) { gold.answer = value; onChange(); } });
      return el("label", { class: "check", for: id }, radio, ` ${label}`);
    }),
    el("p", { class: "muted small hint" }, "A is the first episode above, B the second; participants see them in either order."));
}

/** One gold item's card. ``ctx``: studies, episodes, clipped, index, onChange, redraw. */
function goldCard(data, gold, ctx) {
  const { index, onChange, redraw } = ctx;
  const fb = data.feedback;
  const questions = judgeable(fb);
  const question = questions.find((q) => q.id === gold.question);
  const at = (...rest) => ["feedback", "gold", index, ...rest];
  const qid = uid("gold-q");
  const qSelect = el("select", { id: qid },
    question ? null : el("option", { value: gold.question || "" }, gold.question ? `${gold.question} (no such question)` : "Choose a question…"),
    questions.map((q) => el("option", { value: q.id }, `${q.id} (${q.kind}): ${q.prompt || "no prompt yet"}`)));
  qSelect.value = gold.question || "";
  qSelect.addEventListener("change", () => {
    gold.question = qSelect.value;
    const kind = questions.find((q) => q.id === gold.question)?.kind;
    if (kind === "rate") {
      gold.episodes = (gold.episodes || []).slice(0, 1);
      delete gold.answer;
      if (gold.starts) gold.starts = gold.starts.slice(0, 1);
    } else {
      delete gold.rating_min; delete gold.rating_max;
    }
    redraw();
  });
  const pair = question?.kind !== "rate";
  const slots = pair ? [[0, "Episode A"], [1, "Episode B"]] : [[0, "Episode"]];
  const starts = ctx.clipped ? slots.map(([slot, label]) => startField(gold, slot, slots.length, `${label}: clip starts at step`, at("starts", slot), onChange)) : [];
  const answer = !question ? el("p", { class: "muted small" }, "Choose the question to give its known answer.")
    : pair ? answerField(gold, index, onChange)
      : el("div", { class: "form-grid" },
        inputField(data, at("rating_min"), "Lowest correct rating", { kind: "number", min: question.scale_min ?? 1, max: question.scale_max ?? 7, onChange,
          hint: `On the question's scale (${question.scale_min ?? 1} to ${question.scale_max ?? 7}).` }),
        inputField(data, at("rating_max"), "Highest correct rating", { kind: "number", min: question.scale_min ?? 1, max: question.scale_max ?? 7, onChange }));
  return el("fieldset", { class: "fb-card", dataset: { path: `feedback.gold.${index}` }, "aria-label": `Gold item ${index + 1}` },
    el("legend", {}, `Gold item ${index + 1}`),
    el("div", { class: "fb-card-actions" },
      el("button", { type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Remove gold item ${index + 1}`,
        onclick: () => { fb.gold.splice(index, 1); if (!fb.gold.length) delete fb.gold; redraw(); } }, "Remove")),
    fieldBox(qid, "Question", qSelect, undefined, at("question")),
    slots.map(([slot, label], k) => el("div", { class: `fb-episode-row${ctx.clipped ? " fb-clipped" : ""}` },
      episodePicker(gold, slot, label, { ...ctx, index }, onChange), starts[k])),
    answer);
}

/**
 * The gold part of the feedback section. ``ctx``: ``studies``, ``episodes`` (the source's,
 * listed), ``onChange()`` after an edit, ``redraw()`` after adding or removing an item.
 */
export function goldPart(data, ctx) {
  const fb = data.feedback;
  const gold = fb.gold || [];
  const clipped = fb.clip_steps !== undefined && fb.clip_steps !== null;
  const questions = judgeable(fb);
  const list = el("div", { class: "fb-list", id: "fb-gold-list" },
    gold.length ? gold.map((g, index) => goldCard(data, g, { ...ctx, clipped, index }))
      : el("p", { class: "muted", id: "no-gold" }, "No gold items: nobody is screened out on gold. Add an item whose answer you know to check that participants watch."));
  const add = el("button", { type: "button", class: "btn", id: "add-gold", disabled: questions.length ? undefined : "",
    onclick: () => {
      const first = questions[0];
      (fb.gold ||= []).push({ question: first.id, episodes: first.kind === "compare" ? ["", ""] : [""] });
      ctx.redraw();
      document.querySelector(`#fb-gold-list [data-path="feedback.gold.${fb.gold.length - 1}"] select`)?.focus();
    } }, "+ Add gold item");
  const grid = el("div", { class: "form-grid" },
    inputField(data, ["feedback", "gold_rate"], "Share of gold items", { kind: "number", min: 0, max: 0.5, defaultValue: 0.2, onChange: ctx.onChange,
      hint: "Of each participant's items, 0 to 0.5 (0.2: one in five)." }),
    inputField(data, ["feedback", "gold_min_accuracy"], "Minimum gold accuracy", { kind: "number", min: 0, max: 1, defaultValue: 0, onChange: ctx.onChange,
      hint: "0 to 1: a participant right less often is screened out (with the screen-out code). 0: never." }),
    inputField(data, ["feedback", "gold_min_answers"], "Gold answers before screening", { kind: "int", min: 1, max: 50, defaultValue: 2, onChange: ctx.onChange,
      hint: "Nobody is screened out before giving this many gold answers." }));
  return el("div", { class: "fb-part", dataset: { path: "feedback.gold" } },
    el("h4", {}, "Gold items"),
    el("p", { class: "muted small" }, "Items whose answer you know, mixed in at random and never shown as such. "
      + "Their episodes are picked from the source as filtered above (the 200 newest of each study)."),
    list,
    el("div", { class: "actions" }, add,
      questions.length ? null : el("span", { class: "muted small" }, "Add a compare or rate question first.")),
    grid);
}

/** Move gold items along when a question's id changes (``from`` → ``to``). */
export function renameGoldQuestion(fb, from, to) {
  for (const g of fb.gold || []) if (g.question === from) g.question = to;
}
