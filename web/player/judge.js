/* A feedback study's judging page (docs/feedback.md, "The judge's API"): one item at a time
   — the question, its clip or two (judge-clips.js) and the answer — with the keys shown on
   screen, the minimum watch time counted down, and "Item N of M". One answer per item: the
   first press locks the item until the next is shown; a refused answer says why and goes on
   (the next item, the code page, or the study's state through route()). A reload resumes the
   open item: the server gives it again, with the watch time still due. Everything shown comes
   from the server's item as it is for every item (a gold one is not told apart). */
import * as crowd from "./crowd.js";
import * as clips from "./judge-clips.js";
import { GUARD_MS } from "./questions.js";
import { $, flow, forgetTicket, recall, remember, state } from "./session.js";

const MAX_TEXT = 2000;
const COMPARE_KEYS = { ArrowLeft: "left", ArrowRight: "right", e: "equal", c: "cant_tell" };

const judge = {
  item: null, readyAt: 0, busy: false, selected: -1, points: [], timer: 0, resend: 0, sent: null,
};

/** Judging from where the participant is: the study's instructions first (once), then the
    open item or a new one. */
export function start() {
  document.body.dataset.kind = "feedback";
  const ps = state.participant;
  const first = !ps || !ps.judging || ps.judging.answered === 0;
  if (first && !recall().instructionsSeen) {
    crowd.showInstructions(state.study.instructions_html, () => { remember({ instructionsSeen: true }); next(); });
    return;
  }
  next();
}

/** The next item (the same one while it is open); none: the participant is done. */
async function next() {
  const res = await crowd.call("GET", "/api/play/judge/next", undefined, state.ticket);
  if (!res.ok) { refusedNext(res); return; }
  state.participant = res.body.participant;
  const item = res.body.item;
  if (item) { showItem(item); return; }
  leave();
  if (state.refused) { // the code was refused although no item is left: say so, never loop
    const text = state.refused;
    state.refused = null;
    crowd.showUnreachable(text, next);
    return;
  }
  await flow.finishStudy();
}

function refusedNext(res) {
  leave();
  const code = res.body && res.body.code;
  if ([401, 403, 404].includes(res.status)) { forgetTicket(); flow.boot(); return; }
  if (res.status === 409 && (code === "paused" || code === "closed")) { crowd.showNotOpen(code, next); return; }
  if (res.status === 409) { backToRoute(); return; } // consent, a study that changed kind
  crowd.showUnreachable(crowd.errorText(res), next);
}

/** Where the participant's state leads now (/api/play/me, then route()). */
async function backToRoute() {
  leave();
  const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
  if (me.ok) { flow.route(me.body); return; }
  if ([401, 403, 404].includes(me.status)) { forgetTicket(); flow.boot(); return; }
  crowd.showUnreachable(crowd.errorText(me), backToRoute);
}

/** Leave the judge view: its clips and timers stop. */
function leave() {
  clearInterval(judge.timer);
  clearTimeout(judge.resend);
  judge.timer = judge.resend = 0;
  judge.item = null;
  clips.clear();
}

/* --- the item ---------------------------------------------------------------------------- */
function showItem(item) {
  const again = judge.item && judge.item.token === item.token;
  clearTimeout(judge.resend);
  Object.assign(judge, { item, busy: false, sent: null, resend: 0 });
  const q = item.question;
  const view = $("judge-view");
  view.dataset.kind = q.kind;
  $("judge-prompt").textContent = q.prompt;
  const of = Math.max(1, Number(item.of) || 1);
  const number = Math.min(Math.max(1, Number(item.number) || 1), of);
  $("judge-count").textContent = `Item ${number} of ${of}`;
  $("judge-bar").setAttribute("aria-valuemax", String(of));
  $("judge-bar").setAttribute("aria-valuenow", String(number - 1));
  $("judge-bar-fill").style.width = `${((number - 1) / of) * 100}%`;
  const pair = item.clips.length > 1;
  $("judge-clips").dataset.count = pair ? "2" : "1";
  $("judge-clip-1").hidden = !pair;
  $("judge-label-0").textContent = pair ? "Left" : "The clip";
  $("judge-compare").hidden = q.kind !== "compare";
  $("judge-rate").hidden = q.kind !== "rate";
  $("judge-narrate").hidden = q.kind !== "narrate";
  if (q.kind === "rate") renderScale(q);
  if (!again) { $("judge-text").value = ""; countChars(); }
  for (const b of $("judge-compare").querySelectorAll("button")) b.classList.remove("chosen");
  $("judge-keys").textContent = "";
  $("judge-keys").append(...keysHint(q));
  say(state.refused || "");
  state.refused = null;
  const watch = Math.max(0, Number(item.wait_s) || 0) * 1000;
  // a short guard after an item appears: a key mashed on the last one never answers this
  // one unseen (not for text, which takes longer to type than that)
  judge.readyAt = performance.now() + Math.max(watch, q.kind === "narrate" ? 0 : GUARD_MS);
  setAnswerable(false);
  countdown();
  clearInterval(judge.timer);
  judge.timer = setInterval(countdown, 200);
  if (view.hidden) crowd.show("judge-view");
  if (!again) window.scrollTo({ top: 0 }); // a phone scrolled to the answers: the new prompt
  view.focus({ preventScroll: true }); // keys go to the page, never to a button left focused
  loadClips(item);
}

async function loadClips(item) {
  $("judge-loading").hidden = false;
  $("judge-retry").hidden = true;
  const progress = (done, total) => {
    $("judge-loading-text").textContent = `Loading the clip${item.clips.length > 1 ? "s" : ""}: ${done} of ${total} frames`;
    $("judge-loading-fill").style.width = `${total ? (done / total) * 100 : 100}%`;
  };
  const { current, failed } = await clips.load(item, state.ticket, progress);
  if (!current || judge.item !== item) return;
  $("judge-loading").hidden = true;
  $("judge-retry").hidden = !failed; // the item again (another one if its episode is gone)
}

/** One button per point of the scale, its labels at the ends. */
function renderScale(q) {
  const min = Number(q.scale_min), max = Number(q.scale_max);
  judge.points = [];
  for (let v = min; v <= max && judge.points.length < 11; v++) judge.points.push(v);
  judge.selected = -1;
  $("judge-scale").replaceChildren(...judge.points.map((v, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "btn judge-point";
    b.dataset.rating = String(v);
    b.setAttribute("aria-pressed", "false");
    const value = document.createElement("span");
    value.textContent = String(v);
    b.append(value);
    if (i < 9 && String(i + 1) !== String(v)) { // the key, when it is not the number shown
      const key = document.createElement("kbd");
      key.textContent = String(i + 1);
      b.append(key);
    }
    let label = "";
    if (i === 0 && q.low_label) label = `, ${q.low_label}`;
    if (i === judge.points.length - 1 && q.high_label) label = `, ${q.high_label}`;
    b.setAttribute("aria-label", `${v}${label}`);
    b.addEventListener("click", () => { select(i); answer({ rating: v }); });
    return b;
  }));
  $("judge-low").textContent = q.low_label || "";
  $("judge-high").textContent = q.high_label || "";
}

function select(i) {
  judge.selected = i;
  $("judge-scale").querySelectorAll("button").forEach((b, k) => {
    b.classList.toggle("selected", k === i);
    b.setAttribute("aria-pressed", String(k === i));
  });
}

/** The keys of this question, as the page shows them. */
function keysHint(q) {
  const parts = [];
  const kbd = (text) => Object.assign(document.createElement("kbd"), { textContent: text });
  const add = (keys, what) => {
    if (parts.length) parts.push(" · ");
    parts.push(...keys.flatMap((k, i) => (i ? [" ", kbd(k)] : [kbd(k)])), ` ${what}`);
  };
  if (q.kind === "rate") {
    const n = Math.min(judge.points.length, 9);
    add([n > 1 ? `1–${n}` : "1"], "rate");
    add(["←", "→"], "choose");
    add(["Enter"], "send the chosen rating");
  }
  if (q.kind === "narrate") add(["Ctrl", "Enter"], "send (in the text box)");
  add(["Space"], "pause / play");
  add(["R"], "restart the clip" + ($("judge-clips").dataset.count === "2" ? "s" : ""));
  return parts;
}

/* --- the watch time ---------------------------------------------------------------------- */
const ready = () => performance.now() >= judge.readyAt;

function countdown() {
  const left = judge.readyAt - performance.now();
  const wait = $("judge-wait");
  if (left > 0) {
    const s = Math.ceil(left / 1000);
    const watching = (Number(judge.item && judge.item.wait_s) || 0) > 0 || judge.sent;
    wait.textContent = !watching ? "" : judge.sent
      ? `Your answer is kept: it is sent in ${s} s, once the minimum watch time is over.`
      : `Watch first: you can answer in ${s} s.`;
    wait.dataset.waiting = "true";
    return;
  }
  clearInterval(judge.timer);
  judge.timer = 0;
  delete wait.dataset.waiting;
  wait.textContent = judge.sent ? "Sending your answer…" : "";
  if (!judge.busy) setAnswerable(true);
}

function setAnswerable(on) {
  for (const b of $("judge-answers").querySelectorAll("button")) b.disabled = !on;
}

/* --- the answer -------------------------------------------------------------------------- */
/** Send ``body`` as the answer to the item on screen: once (a second press before the next
    item is ignored), and never before the watch time is over. */
async function answer(body) {
  const item = judge.item;
  if (!item || judge.busy || !ready()) return;
  judge.busy = true;
  judge.sent = body;
  setAnswerable(false);
  if (body.choice) $("judge-compare").querySelector(`[data-choice="${body.choice}"]`).classList.add("chosen");
  say("");
  const res = await crowd.call("POST", `/api/play/judge/${encodeURIComponent(item.token)}/answer`, body, state.ticket);
  if (judge.item !== item) return; // the page moved on meanwhile
  crowd.keepBrowserKey(res.body);
  if (res.ok) { answered(res.body); return; }
  const code = res.body && res.body.code;
  if (res.status === 409 && code === "too_fast") { tooFast(item, body, res.body.detail); return; }
  if ((res.status === 409 && ["already_answered", "item_withdrawn"].includes(code)) || res.status === 404) { next(); return; }
  if (res.status === 409) { backToRoute(); return; } // study_closed, not_taking_part
  if ([401, 403].includes(res.status)) { leave(); forgetTicket(); flow.boot(); return; }
  // not recorded (a bad answer, no connection): say why; the same answer may be sent again
  // (one that did arrive is then refused as already answered, never counted twice)
  say(crowd.errorText(res));
  judge.busy = false;
  judge.sent = null;
  setAnswerable(ready());
  for (const b of $("judge-compare").querySelectorAll("button")) b.classList.remove("chosen");
}

function answered(ps) {
  state.participant = ps;
  if (ps.screened_out || ps.completed || ps.full || ps.code_elsewhere || ps.done) { leave(); flow.route(ps); return; }
  next();
}

/** Answered before the server's watch time was over: the answer is kept and sent again
    once it is (the item stays locked meanwhile: no second answer). */
function tooFast(item, body, detail) {
  const after = Number(detail && detail.retry_after_s);
  const wait = Number.isFinite(after) ? Math.min(Math.max(after, 0.1), 3600) : 1;
  judge.readyAt = performance.now() + wait * 1000;
  countdown();
  clearInterval(judge.timer);
  judge.timer = setInterval(countdown, 200);
  judge.resend = setTimeout(() => {
    if (judge.item !== item) return;
    judge.busy = false;
    answer(body);
  }, wait * 1000 + 50);
}

function sendText() {
  const text = $("judge-text").value.trim();
  if (!text) { say("Write your answer first."); $("judge-text").focus(); return; }
  if (text.length > MAX_TEXT) { say(`Your answer is ${text.length} characters: at most ${MAX_TEXT}, please.`); return; }
  answer({ text });
}

function countChars() {
  const n = $("judge-text").value.length;
  $("judge-chars").textContent = `${n} / ${MAX_TEXT}`;
  $("judge-chars").classList.toggle("over", n > MAX_TEXT);
}

function say(text) { $("judge-message").textContent = text; $("judge-message").hidden = !text; }

/* --- keys -------------------------------------------------------------------------------- */
const typing = (el) => el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT";

function onKey(e) {
  if ($("judge-view").hidden || $("instructions-dialog").open || !judge.item) return;
  if (typing(e.target)) { // the text box takes its keys; only Ctrl+Enter (⌘+Enter) sends
    if (e.target.id === "judge-text" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (!e.repeat) sendText();
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.code === "Space") { e.preventDefault(); if (!e.repeat) clips.toggle(); return; }
  if (e.key === "r" || e.key === "R") { e.preventDefault(); if (!e.repeat) clips.restart(); return; }
  const kind = judge.item.question.kind;
  if (kind === "compare") {
    const choice = COMPARE_KEYS[e.key.length === 1 ? e.key.toLowerCase() : e.key];
    if (!choice) return;
    e.preventDefault();
    if (!e.repeat) answer({ choice });
    return;
  }
  if (kind !== "rate") return;
  if (/^[1-9]$/.test(e.key) && Number(e.key) <= judge.points.length) {
    e.preventDefault();
    if (e.repeat) return;
    const i = Number(e.key) - 1;
    if (!judge.busy && ready()) select(i);
    answer({ rating: judge.points[i] });
    return;
  }
  if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
    e.preventDefault();
    if (judge.busy || !ready()) return; // like every answer key: not during the watch time
    const step = e.key === "ArrowLeft" ? -1 : 1;
    const last = judge.points.length - 1;
    // the first press picks the middle of the scale, the next ones move from there
    select(judge.selected < 0 ? Math.floor(last / 2) : Math.min(Math.max(judge.selected + step, 0), last));
    return;
  }
  if ((e.key === "Enter" || e.code === "NumpadEnter") && e.target.tagName !== "BUTTON") {
    e.preventDefault();
    if (e.repeat) return;
    if (judge.selected < 0) { say("Choose a rating first (← →, a number key, or click one)."); return; }
    answer({ rating: judge.points[judge.selected] });
  }
}

function wire() {
  document.addEventListener("keydown", onKey);
  // a focused button activates on Space's keyup: on this page Space only pauses
  document.addEventListener("keyup", (e) => {
    if (e.code === "Space" && !$("judge-view").hidden && !typing(e.target)) e.preventDefault();
  });
  for (const b of $("judge-compare").querySelectorAll("button")) {
    b.addEventListener("click", () => answer({ choice: b.dataset.choice }));
  }
  $("judge-send").addEventListener("click", sendText);
  $("judge-text").addEventListener("input", countChars);
  $("judge-play").addEventListener("click", clips.toggle);
  $("judge-restart").addEventListener("click", clips.restart);
  $("judge-retry").addEventListener("click", () => { if (!judge.busy) next(); });
  $("judge-instructions").addEventListener("click", () => crowd.openInstructions(state.study.instructions_html));
}

wire();
