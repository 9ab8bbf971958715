// RLDS Studio, study editor: a feedback study's section (the spec's ``feedback:`` part,
// server/study_spec/feedback.py): the episodes judged (feedback-source.js), how they are cut
// and shown, the questions (compare two clips, rate one, narrate one), who judges what, and
// the gold items (feedback-gold.js). Also the kind of a study: play or feedback.

import { el } from "../shared/api.js";
import { fieldBox, getIn, inputField, selectField, setIn, uid } from "./fields.js";
import { goldPart, renameGoldQuestion } from "./feedback-gold.js";
import { playStudies, showCounts, sourceEpisodes, sourcePart } from "./feedback-source.js";

const KINDS = {
  compare: ["Compare", "Two clips side by side: left, right, equally good or can't tell."],
  rate: ["Rate", "One clip, on a scale whose ends you label."],
  narrate: ["Narrate", "One clip, described in the participant's words."],
};
const PAIRINGS = [["random", "Random pairs"], ["disagreement", "Most disagreement first"], ["all_pairs", "Every pair"]];
const VIEWS = [["frames", "Frames the player saw"], ["observation", "Recorded observation"]];
const PLAY_ONLY = ["environments", "narrate_episodes", "ask_outcome"];
const stash = new WeakMap(); // study data → what the other kind had (switching back restores it)

/** Make ``data`` a study of ``kind`` ("play" or "feedback"), keeping the other kind's part
 *  aside in case the designer switches back. */
export function setKind(data, kind) {
  const kept = stash.get(data) || {};
  if (kind === "feedback") {
    for (const key of PLAY_ONLY) if (key in data) { kept[key] = data[key]; delete data[key]; }
    data.kind = "feedback";
    data.feedback = kept.feedback || data.feedback || { source: { studies: [] }, questions: [] };
    delete kept.feedback;
  } else {
    if (data.feedback) kept.feedback = data.feedback;
    delete data.feedback;
    delete data.kind;
    data.environments = kept.environments || [];
    for (const key of PLAY_ONLY) if (key in kept) { data[key] = kept[key]; delete kept[key]; }
  }
  stash.set(data, kept);
}

/** The kind chooser: radio buttons, locked once the study has started (it keeps its kind). */
export function kindField(data, { locked, onKind }) {
  const name = uid("kind");
  const current = data.kind === "feedback" ? "feedback" : "play";
  const options = [["play", "Play (collect demonstrations)"], ["feedback", "Feedback (judge recorded episodes)"]];
  return el("fieldset", { class: "field inputs-field kind-field", dataset: { path: "kind" } },
    el("legend", {}, "What participants do"),
    options.map(([value, label]) => {
      const id = uid("kind");
      const radio = el("input", { id, type: "radio", name, value, disabled: locked ? "" : undefined });
      radio.checked = value === current;
      radio.addEventListener("change", () => { if (radio.checked) onKind(value); });
      return el("label", { class: "check", for: id }, radio, ` ${label}`);
    }),
    el("p", { class: "muted small hint" }, locked ? "A study that has started keeps its kind."
      : "Play: participants play the environments and their episodes are recorded. Feedback: they watch "
        + "recorded episodes of your play studies and compare, rate or describe them."));
}

/** A 422 about the whole feedback section that names its gold item ("gold.1: …") is put at
 *  that item, one about a question's scale at its "Scale to"; others stay as they are. */
export function feedbackProblem(loc, msg) {
  const found = loc.length === 1 && loc[0] === "feedback" && /^(?:Value error, )?gold\.(\d+): (.*)$/s.exec(String(msg));
  if (found) return { loc: ["feedback", "gold", Number(found[1])], msg: found[2] };
  const scale = loc.length === 3 && loc[1] === "questions" && /rating scale/.test(String(msg));
  return scale ? { loc: [...loc, "scale_max"], msg: "must be above Scale from, by 1 to 10 (a scale has 2 to 11 points)" } : { loc, msg };
}

const freeQuestionId = (kind, taken) => {
  let n = 1;
  while (taken.has(`${kind}-${n}`)) n++;
  return `${kind}-${n}`;
};

/** One question's card, at ``index`` of the list; ``redraw()`` after a structural change. */
function questionCard(data, question, index, count, { onChange, redraw }) {
  const fb = data.feedback;
  const at = (...rest) => ["feedback", "questions", index, ...rest];
  const move = (delta) => { fb.questions.splice(index + delta, 0, fb.questions.splice(index, 1)[0]); redraw(); };
  const button = (label, text, onclick, disabled) => el("button", { type: "button", class: "btn btn-small",
    "aria-label": label, title: label, onclick, disabled: disabled ? "" : undefined }, text);
  const kindId = uid("q-kind");
  const kindSelect = el("select", { id: kindId }, Object.entries(KINDS).map(([value, [label]]) => el("option", { value }, label)));
  kindSelect.value = question.kind;
  kindSelect.addEventListener("change", () => { question.kind = kindSelect.value; redraw(); });
  let previous = question.id; // gold items follow a renamed question
  const idField = inputField(data, at("id"), "Id (in exports)", { required: true, onChange: (_path, value) => {
    renameGoldQuestion(fb, previous, value);
    previous = value;
    onChange();
  }, hint: "a-z, 0-9, - and _: names the question in the preference dataset." });
  const promptId = uid("q-prompt");
  const prompt = el("textarea", { id: promptId, rows: 2, maxlength: 500 });
  prompt.value = question.prompt ?? "";
  prompt.addEventListener("input", () => { setIn(data, at("prompt"), prompt.value); onChange(); });
  const rate = question.kind === "rate" ? el("div", { class: "form-grid" },
    inputField(data, at("scale_min"), "Scale from", { kind: "int", min: -100, max: 100, defaultValue: 1, onChange, hint: "The lowest rating." }),
    inputField(data, at("scale_max"), "Scale to", { kind: "int", min: -100, max: 100, defaultValue: 7, onChange, hint: "The highest: 2 to 11 points in all." }),
    inputField(data, at("low_label"), "Low end's label", { onChange, hint: "Shown under the lowest rating, e.g. “not at all”." }),
    inputField(data, at("high_label"), "High end's label", { onChange, hint: "Shown under the highest, e.g. “perfectly”." })) : null;
  return el("fieldset", { class: "fb-card", dataset: { path: `feedback.questions.${index}` }, "aria-label": `Question ${index + 1}` },
    el("legend", {}, `Question ${index + 1}`),
    el("div", { class: "fb-card-actions" },
      button(`Move question ${index + 1} up`, "↑", () => move(-1), index === 0),
      button(`Move question ${index + 1} down`, "↓", () => move(1), index === count - 1),
      el("button", { type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Remove question ${index + 1}`,
        onclick: () => { fb.questions.splice(index, 1); redraw(); } }, "Remove")),
    el("div", { class: "form-grid" },
      fieldBox(kindId, "Kind", kindSelect, KINDS[question.kind]?.[1], at("kind")),
      idField),
    fieldBox(promptId, "Prompt", prompt, "What the participant is asked, e.g. “Which is closer to stacking the cubes?” (plain text).", at("prompt")),
    rate);
}

function questionsPart(data, ctx) {
  const fb = data.feedback;
  const questions = fb.questions || (fb.questions = []);
  const add = (kind) => {
    const id = freeQuestionId(kind, new Set(questions.map((q) => q.id)));
    questions.push({ id, kind, prompt: "" });
    ctx.redraw();
    document.querySelector(`[data-path="feedback.questions.${questions.length - 1}.prompt"] textarea`)?.focus();
  };
  return el("div", { class: "fb-part", dataset: { path: "feedback.questions" } },
    el("h4", {}, "Questions"),
    el("div", { class: "fb-list", id: "fb-question-list" },
      questions.length ? questions.map((q, i) => questionCard(data, q, i, questions.length, ctx))
        : el("p", { class: "muted", id: "no-questions" }, "No questions yet: add one. Each item is asked one question; with several, items take them in turn.")),
    el("div", { class: "actions" }, Object.entries(KINDS).map(([kind, [label]]) =>
      el("button", { type: "button", class: "btn", onclick: () => add(kind) }, `+ ${label} question`))));
}

/** Whole episodes, or clips of N steps (radio buttons and the clip length). */
function segmentPart(data, ctx) {
  const fb = data.feedback;
  const name = uid("segment");
  const clipped = fb.clip_steps !== undefined && fb.clip_steps !== null;
  const radio = (value, label) => {
    const id = uid("seg");
    const input = el("input", { id, type: "radio", name, value });
    input.checked = (value === "clips") === clipped;
    input.addEventListener("change", () => {
      if (value === "clips") fb.clip_steps ??= 30;
      else delete fb.clip_steps;
      ctx.redraw();
    });
    return el("label", { class: "check", for: id }, input, ` ${label}`);
  };
  return el("div", { class: "form-grid" },
    el("fieldset", { class: "field inputs-field", dataset: { path: "feedback.segment" } },
      el("legend", {}, "Segment"), radio("whole", "Whole episodes"), radio("clips", "Clips of N steps"),
      el("p", { class: "muted small hint" }, "A clip is a random window of each episode (the same for every judge of an item).")),
    clipped ? inputField(data, ["feedback", "clip_steps"], "Steps per clip", { kind: "int", min: 2, max: 10000, onChange: ctx.onChange,
      hint: "2 to 10,000 steps; an episode shorter than this is shown whole." }) : null,
    selectField(data, ["feedback", "view"], "The clips show", VIEWS, { defaultValue: "frames", onChange: ctx.onChange,
      hint: "Frames: the pictures streamed to the player. Observation: the image the episode recorded." }),
    inputField(data, ["feedback", "fps"], "Playback speed (frames/s)", { kind: "number", min: 1, max: 60, defaultValue: 15, onChange: ctx.onChange,
      hint: "1 to 60; two clips play in sync." }));
}

function judgingPart(data, ctx) {
  const num = (key, label, opts) => inputField(data, ["feedback", key], label, { onChange: ctx.onChange, ...opts });
  return el("div", { class: "fb-part" },
    el("h4", {}, "Who judges what"),
    el("div", { class: "form-grid" },
      selectField(data, ["feedback", "pairing"], "Which items next", PAIRINGS, { defaultValue: "random", onChange: ctx.onChange,
        hint: "Random: pairs of one environment and task. Most disagreement: the items whose judges disagree most come first. Every pair: of a small set (at most 5,000 items)." }),
      num("judgements_per_item", "Judges per item", { kind: "int", min: 1, max: 50, defaultValue: 3,
        hint: "K: each item is judged by this many participants (agreement needs 2 or more)." }),
      num("judgements_per_participant", "Judgements per participant", { kind: "int", min: 1, max: 1000, defaultValue: 10,
        hint: "A participant who gave this many is done (gold items count)." }),
      num("judgements_total", "Judgements in total", { kind: "int", min: 1, max: 1000000,
        hint: "The study's quota, gold left out. Empty: no quota." }),
      num("min_watch_s", "Minimum watch time (s)", { kind: "number", min: 0, max: 600, defaultValue: 3,
        hint: "An answer sooner than this after the item is shown is refused." })));
}

// What the section last read (the play studies, the source's counts and episodes): a form
// drawn again (after Save marked a problem, after Validate) shows it at once, so the marks
// on its fields stay; it is read again behind and drawn only where it changed.
const memo = { studies: null, key: "", counts: new Map(), episodes: [] };

/** Forget what the section read (another study opened, another designer). */
export function forgetSources() {
  Object.assign(memo, { studies: null, key: "", counts: new Map(), episodes: [] });
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The Feedback section for ``data`` (a feedback study); ``changed()`` after every edit.
 * ``selfId``: the study being edited (never its own source).
 */
export function feedbackSection(api, data, changed, { selfId } = {}) {
  const fb = data.feedback || (data.feedback = { source: { studies: [] }, questions: [] });
  fb.source ||= { studies: [] };
  const section = el("section", { class: "form-section feedback-section", "aria-labelledby": "feedback-title", dataset: { path: "feedback" } },
    el("h3", { id: "feedback-title" }, "Feedback: what participants judge"));
  const known = memo.key === JSON.stringify(fb.source);
  const state = { studies: memo.studies, counts: known ? memo.counts : new Map(), episodes: known ? memo.episodes : [], asked: 0 };
  let timer = null;
  const parts = {};
  const draw = (which) => {
    const ctx = { ...state, onChange: which === "source" ? sourceChanged : changed, redraw: () => { redrawAll(); changed(); } };
    const made = which === "source" ? sourcePart(data, ctx) : which === "segment" ? segmentPart(data, ctx)
      : which === "questions" ? questionsPart(data, ctx) : which === "judging" ? judgingPart(data, ctx) : goldPart(data, ctx);
    if (parts[which]) parts[which].replaceWith(made);
    parts[which] = made;
    return made;
  };
  const redrawAll = () => { for (const which of ["source", "segment", "questions", "judging", "gold"]) draw(which); };
  const recount = async () => {
    const mine = ++state.asked;
    const key = JSON.stringify(fb.source);
    const picked = new Set(fb.source.studies || []);
    const found = await sourceEpisodes(api, fb.source, (state.studies || []).map((s) => s.id));
    if (mine !== state.asked || !section.isConnected) return;
    const episodes = found.episodes.filter((ep) => picked.has(ep.study_id)).sort((a, b) => (a.id < b.id ? -1 : 1));
    const listed = same(episodes, state.episodes);
    Object.assign(state, { counts: found.counts, episodes });
    Object.assign(memo, { key, counts: found.counts, episodes });
    showCounts(parts.source, data, state.counts); // in place: a filter being typed keeps its focus
    if (!listed) draw("gold");
  };
  function sourceChanged(redraw = false) {
    changed();
    clearTimeout(timer);
    timer = setTimeout(recount, 300);
    if (redraw) { // a study ticked or not: the environments to choose among follow
      const focused = document.activeElement?.value;
      draw("source");
      parts.source.querySelector(`.fb-sources input[value="${CSS.escape(String(focused))}"]`)?.focus();
    }
  }
  section.append(draw("source"), el("h4", {}, "Clips"), draw("segment"), draw("questions"), draw("judging"), draw("gold"));
  playStudies(api, selfId).then((studies) => {
    memo.studies = studies;
    if (!same(studies, state.studies)) {
      state.studies = studies;
      draw("source");
    }
    return recount();
  }).catch(() => {
    if (state.studies === null) { state.studies = []; draw("source"); }
  });
  return section;
}
