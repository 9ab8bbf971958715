/* Narrating one's own episode (studies with ``narrate_episodes``, docs/protocol.md,
   "Narrating one's episode"): after an episode is saved, a short form replays it from its
   recorded frames; the participant picks a range of steps (the slider, Start here [ / End
   here ]), says what they did in it (Enter adds it), and goes on with Done, or Skip (Esc).
   It is a question (questions.js): guarded when it opens, so a key that answered the save
   dialog never answers it, and its keys never reach the game or the panel after it.
   The frames and the API take the play ticket in a header: a frame is fetched as a blob and
   drawn on a canvas. */
import { call, errorText } from "./crowd.js";
import * as questions from "./questions.js";

const $ = (id) => document.getElementById(id);
const PLAY_MS = 100; // the replay's pace: 10 steps a second at most

const form = { id: null, ticket: null, last: 0, start: 0, end: 0, then: null, shown: -1,
  wanted: 0, playing: null, busy: false }; // one form at a time

/** Does this study ask the participant to narrate their saved episodes? */
export const asked = (state) => Boolean(state.study && state.study.narrate_episodes && state.ticket);

const base = () => `/api/play/episodes/${encodeURIComponent(form.id)}`;

/** The form for episode ``id`` (``ticket``: the play ticket); ``then()`` once it is done or
    skipped, and at once when the study does not ask after all or the replay cannot load. */
export async function open(id, ticket, then) {
  Object.assign(form, { id, ticket, then, start: 0, end: 0, last: 0, shown: -1, wanted: 0 });
  stopPlaying();
  const dialog = $("narrate-dialog");
  $("narrate-list").replaceChildren();
  $("narrate-list-title").hidden = true;
  $("narrate-text").value = "";
  $("narrate-task").hidden = true;
  say("");
  dialog.dataset.loading = "true";
  dialog.showModal(); // at once: no key reaches the page behind while it loads
  questions.ask(dialog, { keys, scope: questions.allKeys });
  const res = await call("GET", `${base()}/narration`, undefined, ticket);
  delete dialog.dataset.loading;
  if (form.id !== id) return;
  if (!res.ok) { close(); return; } // 409: the study does not ask; else nothing to replay
  const body = res.body;
  form.last = Math.max((body.steps || 1) - 1, 0);
  form.end = form.last;
  $("narrate-task").textContent = body.instruction ? `Your task was: ${body.instruction}` : "";
  $("narrate-task").hidden = !body.instruction;
  const slider = $("narrate-step");
  slider.max = String(form.last);
  slider.value = "0";
  for (const n of body.narrations || []) listed(n);
  renderRange();
  showStep(0);
}

/** The form's keys: [ and ] mark the range (also while typing), Enter adds (a focused
    button: that one), Esc skips. */
function keys(e) {
  if (e.code === "BracketLeft") return $("narrate-start");
  if (e.code === "BracketRight") return $("narrate-end");
  if (e.code === "Escape") return $("narrate-skip");
  return questions.enterAnswers($("narrate-dialog"), () => $("narrate-add"))(e);
}

function say(text) { $("narrate-message").textContent = text; $("narrate-message").hidden = !text; }

const step = () => Number($("narrate-step").value);

function renderRange() {
  const { start, end } = form;
  $("narrate-range").textContent = start === end ? `Step ${start}` : `Steps ${start} to ${end}`;
}

/** The frame of step ``n`` on screen (only the newest one asked for is shown). */
async function showStep(n) {
  form.wanted = n;
  $("narrate-step-out").textContent = `Step ${n} of ${form.last}`;
  if (n === form.shown || !form.id) return;
  let image = null;
  try {
    const res = await fetch(`${base()}/frames/${n}`, { headers: { "X-Play-Ticket": form.ticket } });
    if (res.ok) image = await createImageBitmap(await res.blob());
  } catch { image = null; }
  if (!image) return;
  if (form.wanted === n) draw(image, n);
  image.close();
}

function draw(image, n) {
  const canvas = $("narrate-frame");
  if (canvas.width !== image.width || canvas.height !== image.height) {
    canvas.width = image.width; canvas.height = image.height;
  }
  canvas.getContext("2d").drawImage(image, 0, 0);
  canvas.dataset.step = String(n);
  form.shown = n;
}

function mark(which) {
  const n = step();
  if (which === "start") { form.start = n; form.end = Math.max(form.end, n); }
  else { form.end = n; form.start = Math.min(form.start, n); }
  renderRange();
}

/** Add what the text box says over the range; true when it was added. */
async function add() {
  const text = $("narrate-text").value.trim();
  if (!text) { say("Write what you did in these steps first."); $("narrate-text").focus(); return false; }
  if (form.busy) return false;
  form.busy = true;
  const sent = { start_step: form.start, end_step: form.end, text };
  const res = await call("POST", `${base()}/narrations`, sent, form.ticket).finally(() => { form.busy = false; });
  if (!res.ok) { say(errorText(res)); return false; }
  say("");
  listed({ ...sent, ...res.body });
  $("narrate-text").value = "";
  // the next part starts after this one
  if (form.end < form.last) { form.start = form.end + 1; form.end = form.last; renderRange(); }
  $("narrate-text").focus();
  return true;
}

function listed(n) {
  const item = document.createElement("li");
  const range = document.createElement("strong");
  range.textContent = n.start_step === n.end_step ? `Step ${n.start_step}` : `Steps ${n.start_step} to ${n.end_step}`;
  item.append(range, `: ${n.text}`);
  $("narrate-list").append(item);
  $("narrate-list-title").hidden = false;
}

/** Done: what is still in the text box is added first. */
async function done() {
  if ($("narrate-text").value.trim() && !(await add())) return;
  close();
}

function close() {
  stopPlaying();
  const dialog = $("narrate-dialog");
  if (dialog.open) dialog.close();
  delete $("narrate-frame").dataset.step;
  const then = form.then;
  Object.assign(form, { id: null, then: null });
  if (then) then();
}

/** Play the replay from the slider's step (Play again: pause). */
function togglePlay() {
  if (form.playing) { stopPlaying(); return; }
  if (step() >= form.last) $("narrate-step").value = "0";
  $("narrate-play").textContent = "Pause";
  form.playing = setInterval(() => {
    if (step() >= form.last) { stopPlaying(); return; }
    $("narrate-step").value = String(step() + 1);
    showStep(step());
  }, PLAY_MS);
}

function stopPlaying() {
  clearInterval(form.playing);
  form.playing = null;
  $("narrate-play").textContent = "Play";
}

$("narrate-step").addEventListener("input", () => { stopPlaying(); showStep(step()); });
$("narrate-start").addEventListener("click", () => mark("start"));
$("narrate-end").addEventListener("click", () => mark("end"));
$("narrate-add").addEventListener("click", add);
$("narrate-done").addEventListener("click", done);
$("narrate-skip").addEventListener("click", close);
$("narrate-play").addEventListener("click", togglePlay);
// Esc is the form's Skip (its key, after the guard), never the browser's own close
$("narrate-dialog").addEventListener("cancel", (e) => e.preventDefault());
