/* The participant's way in: the study link, platform ids, the device check, join, consent,
   and where the server's participant state leads (docs/protocol.md); a reload finds its place
   again from /api/play/me with the ticket kept in sessionStorage. */
import * as crowd from "./crowd.js";
import * as judge from "./judge.js";
import * as preview from "./preview.js";
import { $, flow, forgetTicket, link, params, playMessage, previewId, recall, remember, state, stopPlaying, token } from "./session.js";

/* --- entry: link, platform ids, consent ------------------------------------------------ */
async function boot() {
  state.closing = false;
  if (previewId) { await bootPreview(); return; }
  if (!token) {
    if (params.get("study")) { state.sessionId = recall().session || null; flow.connect(); return; }
    crowd.showStatus({ title: "No study link",
      text: "This page needs a study link (…/player.html?token=…) from the study's researchers." });
    return;
  }
  const saved = recall();
  crowd.useBrowserKeyOf(token, saved.who);
  state.ticket = saved.ticket || null;
  state.sessionId = saved.session || null;
  const look = await crowd.call("POST", "/api/play/preview", { token });
  if (look.status === 404) { crowd.showInvalidLink(); return; }
  if (!look.ok) { crowd.showUnreachable(crowd.errorText(look), boot); return; }
  useStudy(look.body.study);
  const ids = crowd.platformParams(params);
  if (ids.assignmentId === crowd.MTURK_PREVIEW) { crowd.showPreview(state.study); return; }
  const judging = state.study.kind === "feedback"; // judged by tapping or with keys: any device
  if (!judging && !state.ticket && !recall().deviceOk && !crowd.deviceCanPlay(state.study)) {
    const leave = Object.keys(ids).length ? () => join({ params: ids }, false, true) : null; // screened out
    crowd.showDeviceCannotPlay(state.study, crowd.platformOf(ids), () => { remember({ deviceOk: true }); flow.keyboardAttached(); boot(); }, leave);
    return;
  }
  if (state.ticket) {
    const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
    if (me.ok) { route(me.body); return; }
    if (me.status === 0) { crowd.showUnreachable(crowd.errorText(me), boot); return; }
    forgetTicket(); // expired, or the link was replaced: join again
  }
  const anonymous = localStorage.getItem(anonKey()); // a returning anonymous participant
  if (look.body.state !== "active" && !Object.keys(ids).length && !anonymous) { crowd.showNotOpen(look.body.state, boot); return; }
  if (Object.keys(ids).length) { await join({ params: ids }, false); return; }
  if (anonymous && state.study.allow_anonymous) { await join({ participant_id: anonymous }, false); return; }
  crowd.askForId(state.study, "", (id) => join(id ? { participant_id: id } : {}, true));
}

/** A preview: back where it was (the ticket kept), else the platform to preview as. */
async function bootPreview() {
  preview.markTest();
  const saved = recall();
  crowd.useBrowserKeyOf(link, saved.who);
  state.ticket = saved.ticket || null;
  state.sessionId = saved.session || null;
  if (state.ticket) {
    const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
    if (me.ok) { route(me.body); return; }
    forgetTicket();
  }
  await preview.choosePlatform(previewId, joined);
}

function anonKey() { return `rlds-anon:${token}`; }

async function join(body, typed, leaving = false) {
  const who = (body.params && (body.params.PROLIFIC_PID || body.params.workerId)) || body.participant_id;
  const key = crowd.useBrowserKeyOf(token, who);
  const res = await crowd.call("POST", "/api/play/join", { token, ...body, ...(key ? { browser_key: key } : {}) });
  if (!res.ok) {
    if (res.status === 404) crowd.showInvalidLink();
    else if (res.status === 409 && res.body.code === "preview") crowd.showPreview(state.study);
    else if (res.status === 409) crowd.showNotOpen(res.body.code, boot, crowd.errorText(res));
    else if (typed && res.status === 422) crowd.pageError(crowd.errorText(res));
    else crowd.showUnreachable(crowd.errorText(res), boot);
    return;
  }
  if (res.body.participant.platform === "anonymous") localStorage.setItem(anonKey(), res.body.participant.external_id);
  await joined(res.body, leaving);
}

/** Join's answer (or a preview's): keep the ticket and browser key, then the next screen
    (``leaving``: the participant chose to leave before consent, which declines it). */
async function joined(body, leaving = false) {
  state.ticket = body.ticket;
  crowd.useBrowserKeyOf(link, body.participant_id);
  crowd.keepBrowserKey(body);
  remember({ who: body.participant_id });
  useStudy(body.study);
  if (leaving) await answerConsent(false, "device"); else route(body.participant);
}

function useStudy(study) {
  state.study = study;
  state.envs = Object.fromEntries(study.environments.map((e) => [e.id, e]));
  $("brand-name").textContent = study.name;
  document.title = `${study.name} — RLDS Studio`;
}

/** The screen a participant's state calls for (ParticipantState, docs/protocol.md). */
async function route(ps) {
  state.participant = ps;
  if (ps.screened_out) { stopPlaying(); crowd.showCode("screenout", ps.screenout, ps); return; }
  if (ps.completed && ps.completion) { stopPlaying(); crowd.showCode("completion", ps.completion, ps); return; }
  if (ps.full && ps.full_outcome) { stopPlaying(); crowd.showCode("full", ps.full_outcome, ps); return; }
  if (ps.code_elsewhere) {
    stopPlaying();
    crowd.showStatus({ title: "You have already taken part",
      text: "Your code was shown in the browser where you took part. Open the study link there to see it again." });
    return;
  }
  if (ps.done) { await finishStudy(); return; }
  if (ps.consent_required && !ps.consented) { crowd.showConsent(state.study.consent_html, answerConsent); return; }
  if (state.study.kind === "feedback") { judge.start(); return; } // a feedback study: judging
  if (!state.ws) flow.connect();
}

/** Yes or no to the consent form (``at`` "device": leaving at the device check, unasked). */
async function answerConsent(accept, at = "consent") {
  const res = await crowd.call("POST", "/api/play/consent", { accept, at }, state.ticket);
  crowd.keepBrowserKey(res.body);
  if (res.ok) { route(res.body); return; }
  if ([401, 403, 404].includes(res.status)) { forgetTicket(); boot(); return; }
  crowd.pageError(crowd.errorText(res));
}

/** Ask for the completion code; when something is still missing, say what and go on playing. */
async function finishStudy() {
  const res = await crowd.call("POST", "/api/play/complete", {}, state.ticket);
  crowd.keepBrowserKey(res.body);
  if (res.ok && (res.body.completion || res.body.full_outcome || res.body.code_elsewhere)) { route(res.body); return; }
  if ([401, 403, 404].includes(res.status)) { forgetTicket(); boot(); return; }
  // not done after all (the server says what is missing): back to the games
  if (res.ok) state.participant = res.body;
  if (state.participant) state.participant.done = false;
  state.refused = res.ok ? "Some of the study is still to do." : crowd.errorText(res);
  if (state.study.kind === "feedback") { judge.start(); return; }
  if (!state.ws) { flow.connect(); return; }
  flow.goLobby();
}

/* --- where to go next --------------------------------------------------------------- */
/** A participant's start was refused (a game filled up meanwhile, the study was paused...):
    the server sent their state and the way forward; follow it, never back into the same
    refusal. */
function refusedStart(m) {
  if (m.participant) state.participant = m.participant;
  const kind = m.next ? m.next.kind : null;
  if (kind === "done") { finishStudy(); return; }
  if (kind === "paused") { crowd.showNotOpen("paused", checkBack); return; }
  if (kind === "closed") {
    if (state.participant && state.participant.done) finishStudy();
    else { stopPlaying(); crowd.showNotOpen("closed", checkBack); }
    return;
  }
  playMessage(m.message);
  flow.showNext(m.next, "");
}

/** Back from a paused study: the state again, then on where it leads. */
async function checkBack() {
  const me = await crowd.call("GET", "/api/play/me", undefined, state.ticket);
  if (!me.ok) { boot(); return; }
  state.participant = me.body;
  if (me.body.study_state === "paused") { crowd.showNotOpen("paused", checkBack); return; }
  if (!state.ws) { route(me.body); return; }
  flow.goLobby();
}

Object.assign(flow, { boot, useStudy, route, finishStudy, refusedStart });
