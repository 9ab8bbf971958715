/* The participant's screens around the game: entry, a friendly stop (bad link, study not
   open, MTurk preview, another tab), consent, instructions, and the completion or
   screen-out code with the way back to the crowd platform. Also the /api/play calls. */

import { tapOr, touchOnly } from "./words.js";

const $ = (id) => document.getElementById(id);
const VIEWS = ["status-view", "preview-view", "join-view", "consent-view", "instructions-view", "code-view",
  "lobby-view", "play-view", "judge-view", "done-view"];

/** The URL parameters Prolific and MTurk add to a study link. */
const PLATFORM_PARAMS = ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId",
  "hitId", "turkSubmitTo"];
export const MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE";
const UNREACHABLE = "The server cannot be reached. Check your connection and try again.";

/* A designer's preview as a participant (preview.js): codes are marked TEST and the
   way back to the platform goes nowhere. */
let testMode = false;
export function setTestMode(on) { testMode = on; }

export function show(view) {
  for (const id of VIEWS) $(id).hidden = id !== view;
  pageError("");
  $("main").focus({ preventScroll: true });
}

export function pageError(text) { const el = $("page-error"); el.textContent = text || ""; el.hidden = !text; }

/** The platform ids in the page's URL, e.g. {PROLIFIC_PID: "…", STUDY_ID: "…"}. */
export function platformParams(params) {
  const found = {};
  for (const key of PLATFORM_PARAMS) {
    const value = params.get(key);
    if (value) found[key] = value;
  }
  return found;
}

/* The browser key: the participant's codes are shown only to the browser that holds it (the
   one that finished), never to someone who only knows the id. Kept per study link and id. */
let browserKey = null;
let browserKeyName = null;
/** Use the key this browser keeps for participant ``who`` of this study link (if any). */
export function useBrowserKeyOf(token, who) {
  browserKeyName = who ? `rlds-key:${token}:${who}` : null;
  browserKey = browserKeyName ? localStorage.getItem(browserKeyName) : null;
  return browserKey;
}
/** Keep a key the server handed out with this answer (``body.browser_key``). */
export function keepBrowserKey(body) {
  if (!body || !body.browser_key || !browserKeyName) return;
  browserKey = body.browser_key;
  localStorage.setItem(browserKeyName, browserKey);
}

/** A JSON call to the player API: ``{ok, status, body}``; status 0 when unreachable. */
export async function call(method, path, json, ticket) {
  const headers = {};
  if (json !== undefined) headers["Content-Type"] = "application/json";
  if (ticket) headers["X-Play-Ticket"] = ticket;
  if (ticket && browserKey) headers["X-Browser-Key"] = browserKey;
  let res;
  try {
    res = await fetch(path, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
  } catch {
    return { ok: false, status: 0, body: { detail: UNREACHABLE } };
  }
  let body = {};
  try { body = await res.json(); } catch { body = {}; }
  return { ok: res.ok, status: res.status, body };
}

/** A plain sentence for an error answer: the server's own words, never a stack. */
export function errorText(res) {
  const detail = res.body && res.body.detail;
  if (typeof detail === "string") return detail;
  const first = Array.isArray(detail) ? detail[0] : null;
  if (first && typeof first.msg === "string") return first.msg.replace(/^Value error, /, "");
  if (res.status === 0) return UNREACHABLE;
  return "Something went wrong on our side. Please try again in a moment.";
}

/* --- screens ------------------------------------------------------------------------ */

/** A page that explains why the study cannot go on here, with one button when there is a
    way forward (``button: {label, onClick}``). */
export function showStatus({ title, text, instructionsHtml = "", button = null, alt = null }) {
  $("status-title").textContent = title;
  $("status-text").textContent = text;
  $("status-text").className = "";
  $("status-instructions").innerHTML = instructionsHtml; // rendered server-side, HTML disabled
  $("status-instructions").hidden = !instructionsHtml;
  for (const [id, b] of [["status-btn", button], ["status-alt", alt]]) {
    const btn = $(id);
    btn.hidden = !b;
    btn.onclick = null;
    if (b) {
      btn.textContent = b.label;
      btn.onclick = () => { btn.disabled = true; Promise.resolve(b.onClick()).finally(() => { btn.disabled = false; }); };
    }
  }
  const btn = $("status-btn");
  show("status-view");
  if (button) btn.focus();
}

const NOT_OPEN = {
  paused: ["This study is paused", "The researchers have paused this study for a moment. Please come back a little later, using the same link."],
  closed: ["This study has ended", "This study is closed and no longer accepts participants. Thank you for your interest."],
  full: ["This study is full", "Enough people have already taken part in this study. Thank you for your interest."],
};

export function showNotOpen(studyState, retry, detail = "") {
  const [title, text] = NOT_OPEN[studyState] || ["This study is not open", detail || "This study is not accepting participants right now."];
  showStatus({ title, text, button: studyState === "paused" ? { label: "Try again", onClick: retry } : null });
}

/* Devices. A touch-only device (a phone, a tablet without keyboard) plays only a study whose
   ``inputs`` list touch, and only its environments a touch screen reaches (env.touch: touch
   controls or on-screen buttons, server/study_spec/touch.py); anything else is assumed to
   have a keyboard. Said before anything else (no consent, no participant made), in the
   platform's words: the way out is to come back on a computer, to leave the study (the
   screen-out page, when the link came from a platform; MTurk: return the HIT), or to go on
   anyway (a keyboard or gamepad attached). */
const DEFAULT_INPUTS = ["keyboard", "gamepad"];
const untouchable = (study) => (study.environments || []).filter((e) => e.touch === false);
export const deviceCanPlay = (study) => !touchOnly()
  || ((study.inputs || DEFAULT_INPUTS).includes("touch") && !untouchable(study).length);

/** Where the link came from, by its ids: "prolific", "mturk" or "direct". */
export function platformOf(ids) {
  if (ids.PROLIFIC_PID) return "prolific";
  return ids.workerId || ids.assignmentId || ids.hitId ? "mturk" : "direct";
}

const NEEDS = { keyboard: "a keyboard", gamepad: "a gamepad" };
const WAY_OUT = {
  prolific: (leave) => `Please open the study link on a computer${leave ? ", or leave with the button below and return the study on Prolific (a screen-out, or a no-code return)" : ", or return the study on Prolific"}.`,
  mturk: () => "Please open the HIT on a computer, or return the HIT on MTurk (the Return button on the HIT's page): you need no code for that.",
  direct: (leave) => `Please open the study link on a computer${leave ? ", or leave the study with the button below" : ", or close this page"}.`,
};
export function showDeviceCannotPlay(study, platform, onContinue, onLeave) {
  const inputs = study.inputs || DEFAULT_INPUTS;
  const needs = inputs.filter((i) => NEEDS[i]).map((i) => NEEDS[i]).join(" or ") || NEEDS.keyboard;
  const away = (WAY_OUT[platform] || WAY_OUT.direct)(Boolean(onLeave));
  if (!inputs.includes("touch")) {
    showStatus({ title: `This study needs ${needs}`,
      text: `The games in this study are played with ${needs}, which this device does not seem to have. ${away} If ${needs} is connected, you can continue.`,
      button: { label: "Continue anyway", onClick: onContinue },
      alt: onLeave ? { label: "Leave the study", onClick: onLeave } : null });
    return;
  }
  const games = untouchable(study);
  const all = games.length === (study.environments || []).length;
  const names = games.map((e) => `“${e.name}”`).join(", ");
  showStatus({ title: all ? "This study cannot be played on a touch screen" : "Some games of this study cannot be played on a touch screen",
    text: `${all ? "Its games" : names} cannot be played by touch: ${all || games.length > 1 ? "they need" : "it needs"} ${needs}, which this device does not seem to have. ${away} If ${needs} is connected, you can continue.`,
    button: { label: "Continue anyway", onClick: onContinue },
    alt: onLeave ? { label: "Leave the study", onClick: onLeave } : null });
}

export function showInvalidLink() {
  showStatus({ title: "This link no longer works",
    text: "This study link is no longer valid (it may have been replaced). Please ask the researchers for the current link." });
}

export function showUnreachable(text, retry) {
  showStatus({ title: "We could not continue", text, button: { label: "Try again", onClick: retry } });
}

/** MTurk's preview: what the HIT is about, and nothing to start. */
export function showPreview(study) {
  showStatus({ title: study.name,
    text: "This is a preview. Accept the HIT to start.", instructionsHtml: study.instructions_html });
  $("status-text").classList.add("alert", "alert-info");
}

/** The typed-id form (or a start button when the study allows anonymous players). */
export function askForId(study, notice, onSubmit) {
  const anonymous = Boolean(study && study.allow_anonymous);
  $("join-study").textContent = study ? study.name : "";
  $("join-ask").textContent = anonymous
    ? `${tapOr("Tap", "Press")} Start to begin. If you were given a participant ID, you may enter it first.`
    : "Enter the participant ID you were given (for example your Prolific ID) to begin.";
  $("participant-id-field").firstChild.textContent = anonymous ? "Participant ID (optional)" : "Participant ID";
  $("join-btn").textContent = anonymous ? "Start" : "Continue";
  $("join-form").onsubmit = async (event) => {
    event.preventDefault();
    const id = $("participant-id").value.trim();
    if (!id && !anonymous) { pageError("Please enter your participant ID."); $("participant-id").focus(); return; }
    $("join-btn").disabled = true;
    try { await onSubmit(id); } finally { $("join-btn").disabled = false; }
  };
  show("join-view");
  pageError(notice);
  $("participant-id").focus();
}

export function showConsent(html, onAnswer) {
  $("consent-text").innerHTML = html || ""; // rendered server-side, HTML disabled
  const answer = (accept) => async () => {
    $("consent-yes").disabled = $("consent-no").disabled = true;
    try { await onAnswer(accept); } finally { $("consent-yes").disabled = $("consent-no").disabled = false; }
  };
  $("consent-yes").onclick = answer(true);
  $("consent-no").onclick = answer(false);
  show("consent-view");
  $("consent-yes").focus();
}

export function showInstructions(html, onContinue) {
  $("instructions-text").innerHTML = html || "<p>There are no special instructions.</p>";
  $("instructions-ok").onclick = onContinue;
  show("instructions-view");
  $("instructions-ok").focus();
}

/** The instructions again, over whatever screen is showing. */
export function openInstructions(html) {
  $("instructions-dialog-text").innerHTML = html || "<p>There are no special instructions.</p>";
  if (!$("instructions-dialog").open) $("instructions-dialog").showModal();
  $("instructions-close").focus();
}

const CODE_WORDS = {
  completion: { title: "Thank you — you have finished!",
    withCode: "Your completion code is below. Copy it, or use the button to return to the platform.",
    withoutCode: "You have finished this study. You can close this page." },
  full: { title: "This study is now full",
    withCode: "The study filled up before you could finish it. Thank you for your time! Please give this code to the platform.",
    withoutCode: "The study filled up before you could finish it. Thank you for your time. You can close this page." },
  screenout: { title: "Thank you for your time" }, // its words: screenoutText
};
/* A screen-out's first sentence when the participant left at the device check (never saw
   the consent), and what an MTurk worker does instead of returning a code: MTurk has no
   code step for leaving, the worker returns the HIT. */
const LEFT_AT_DEVICE = "This device cannot play the games of this study, so the study ends here.";
const FAILED_CHECKS = "Your answers did not pass this study's quality checks, so the study ends here."; // a feedback study's gold
const RETURN_HIT = "Please return the HIT on MTurk (the Return button on the HIT's page). You need no code for that.";

/** The screen-out page's words for this participant (``who``: ParticipantState). */
function screenoutText(code, redirect, who) {
  const first = { device: LEFT_AT_DEVICE, gold: FAILED_CHECKS }[who.screenout_reason] || "You chose not to take part, so the study ends here.";
  if (who.platform === "mturk") return `${first} ${RETURN_HIT}`;
  const then = code ? "Please return this code to the platform." : redirect ? "Use the button below to finish." : "You can close this page.";
  return `${first} ${then}`;
}

/** Where a platform is, in words, for the redirect button. */
function platformName(redirect) {
  if (redirect.method === "POST") return "Amazon Mechanical Turk";
  try {
    if (new URL(redirect.url).hostname.endsWith("prolific.com")) return "Prolific";
  } catch { /* not a URL: named generically below */ }
  return "";
}

/** The completion or screen-out page: ``outcome = {code, redirect}``; ``who`` the
    ParticipantState (its platform and why it was screened out choose the words). */
export function showCode(kind, outcome, who = {}) {
  const words = CODE_WORDS[kind];
  const mturkOut = kind === "screenout" && who.platform === "mturk";
  const code = mturkOut ? "" : (outcome && outcome.code) || ""; // MTurk takes no code for a return
  const redirect = outcome && outcome.redirect;
  $("code-title").textContent = words.title;
  $("code-text").textContent = kind === "screenout" ? screenoutText(code, redirect, who) : code ? words.withCode : words.withoutCode;
  $("code-box").hidden = !code;
  $("code-value").value = code;
  $("code-copied").textContent = "";
  const btn = $("redirect-btn");
  btn.hidden = !redirect;
  if (redirect) {
    const name = platformName(redirect);
    btn.textContent = redirect.method === "POST" ? "Submit the HIT" : name ? `Return to ${name}` : "Return to the platform";
    btn.onclick = () => (testMode ? testLeave(name, redirect) : leave(redirect));
    if (!code && kind !== "screenout") $("code-text").textContent = "Use the button below to finish.";
  }
  show("code-view");
  (redirect ? btn : code ? $("code-copy") : $("main")).focus();
}

/** A preview's redirect button: where a participant would go, and nothing sent. */
function testLeave(name, redirect) {
  $("code-copied").textContent = `TEST: a participant would now go to ${name || redirect.url}` +
    (redirect.method === "POST" ? " (the HIT submitted with this code)" : "") + ". Nothing is sent from a preview.";
}

/** Go back to the platform: a GET link is followed; MTurk wants a form POSTed to it. */
function leave(redirect) {
  if (redirect.method !== "POST") { location.assign(redirect.url); return; }
  const form = $("redirect-form");
  form.action = redirect.url;
  $("redirect-fields").replaceChildren(...Object.entries(redirect.fields || {}).map(([name, value]) => {
    const input = document.createElement("input");
    input.type = "hidden"; input.name = name; input.value = value;
    return input;
  }));
  form.submit();
}

async function copyCode() {
  const input = $("code-value");
  let copied = false;
  try {
    await navigator.clipboard.writeText(input.value);
    copied = true;
  } catch {
    // no clipboard access (plain http, or a browser that asks first): select it instead
    input.focus(); input.select();
    try { copied = document.execCommand("copy"); } catch { copied = false; }
  }
  $("code-copied").textContent = copied ? "Copied."
    : tapOr("Touch and hold the selected code, then choose Copy.", "Press Ctrl+C (⌘C on a Mac) to copy the selected code.");
}

$("code-copy").addEventListener("click", copyCode);
$("code-value").addEventListener("focus", (e) => e.target.select());
$("instructions-close").addEventListener("click", () => $("instructions-dialog").close());
