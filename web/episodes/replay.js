// The replay viewer of the episodes page: frame, everything recorded for the step, the
// reward chart, keyboard stepping, step tags, narrations (narrations.js) and the episode's
// judgements in feedback studies (judgements.js). Steps are read
// a page at a time (any step of a long episode), and only a few pages are kept.

import { el } from "../shared/api.js";
import { createChart } from "./chart.js";
import { endingText } from "./ending.js";
import { createJudgements } from "./judgements.js";
import { createNarrations } from "./narrations.js";

const $ = (id) => document.getElementById(id);
const PAGE = 200;          // steps per request
const KEEP_PAGES = 6;      // pages kept in memory (the current one and its neighbours)
const DEFAULT_MS = 66;     // playback pace when the log has no step times
const MAX_VALUES = 64;     // observation values listed before "show all"

/**
 * ``api``/``guard``/``toast`` as the page has them; ``onChange(episode, step)`` after the
 * step or episode changes (the page writes it into the URL); ``onEdited()`` after a tag;
 * ``onEpisode(delta)`` opens the next (1) or previous (-1) episode of the list;
 * ``onOutcome(outcome)`` sets the reviewer's outcome of the open episode.
 */
export function createReplay({ api, guard, toast, onChange, onEdited, onEpisode, onOutcome }) {
  const state = { episode: null, step: 0, pages: new Map(), playing: false, timer: null,
                  mark: null, markEnd: null, chart: null, want: 0 };

  // --- steps, a page at a time ---------------------------------------------------------
  function page(index) {
    const ep = state.episode;
    if (!state.pages.has(index)) {
      const request = api("GET", `/api/episodes/${ep.id}/steps?start=${index * PAGE}&limit=${PAGE}`)
        .then((body) => body.items)
        .catch((err) => { state.pages.delete(index); throw err; });
      state.pages.set(index, request);
      while (state.pages.size > KEEP_PAGES) {
        const far = [...state.pages.keys()].sort((a, b) =>
          Math.abs(b - index) - Math.abs(a - index))[0];
        state.pages.delete(far);
      }
    }
    return state.pages.get(index);
  }

  async function stepItem(n) {
    const items = await page(Math.floor(n / PAGE));
    return items[n % PAGE];
  }

  // --- rendering -------------------------------------------------------------------------
  const range = () => {
    if (state.mark === null) return null;
    const end = state.markEnd ?? state.step;
    return [Math.min(state.mark, end), Math.max(state.mark, end)];
  };

  function show(n) {
    const ep = state.episode;
    if (!ep || !ep.steps) return;
    state.step = Math.max(0, Math.min(ep.steps - 1, n));
    const want = state.step;
    state.want = want;
    $("step-slider").value = want;
    $("frame").src = `/api/episodes/${ep.id}/frames/${want}`;
    $("step-label").textContent = `${want} / ${ep.steps - 1}`;
    showTagHint();
    narrations.showStep(want);
    if (!range()) { $("st-start").value = want; $("st-end").value = want; }
    if (state.chart) state.chart.redraw();
    onChange(ep, want);
    stepItem(want).then((item) => { if (state.want === want && item) renderStep(item); })
      .catch((err) => toast(err.message, "error"));
    const next = Math.floor(want / PAGE) + 1;  // read ahead while playing or stepping
    if (want % PAGE > PAGE - 20 && next * PAGE < ep.steps) page(next).catch(() => {});
  }

  /** What ``t`` will do now: which steps, with which name (the name field, shown). */
  function showTagHint() {
    if (!state.episode) return;
    const r = range();
    const name = $("st-name").value.trim();
    const what = r ? `steps ${r[0]}..${r[1]} (marked)` : `step ${state.step}`;
    $("mark-info").textContent = name
      ? `t tags ${what} “${name}” — Shift+T changes the name`
      : `t tags ${what} — type its name first (Shift+T)`;
  }

  const row = (name, ...value) => el("tr", {}, el("th", { scope: "row" }, name), el("td", {}, ...value));
  const code = (v) => el("code", {}, typeof v === "string" ? v : JSON.stringify(v));

  function inputCell(raw) {
    if (raw === null || raw === undefined) return [el("span", { class: "muted" }, "none recorded")];
    const parts = [];
    if (raw.keys && raw.keys.length) parts.push(el("span", { class: "sd-keys" }, ...raw.keys.map((k) => el("kbd", {}, k))));
    const buttons = Object.entries(raw.buttons || {}).filter(([, v]) => v > 0);
    if (buttons.length) parts.push(el("span", {}, ` buttons ${buttons.map(([b, v]) => `${b}=${v}`).join(", ")}`));
    const axes = (raw.axes || []).map((v, i) => [i, v]).filter(([, v]) => v !== 0);
    if (axes.length) parts.push(el("span", {}, ` axes ${axes.map(([i, v]) => `${i}: ${v}`).join(", ")}`));
    for (const [device, values] of Object.entries(raw.devices || {})) { // mouse, spacemouse, phone
      const pushed = (Array.isArray(values) ? values : []).map((v, i) => [i, v]).filter(([, v]) => v !== 0);
      if (pushed.length) parts.push(el("span", {}, ` ${device} ${pushed.map(([i, v]) => `${i}: ${v}`).join(", ")}`));
    }
    if (!parts.length) parts.push(el("span", { class: "muted" }, "nothing pressed"));
    return parts;
  }

  function observationCell(item, obs) {
    const head = el("div", { class: "sd-obs-head" }, el("strong", {}, obs.name),
      el("span", { class: "muted" }, ` ${obs.dtype} [${obs.shape.join("×")}]`));
    const key = encodeURIComponent(obs.key);
    const base = `/api/episodes/${state.episode.id}/steps/${item.step}`;
    const body = [];
    if (obs.image) {
      body.push(el("img", { class: "sd-obs-img", src: `${base}/observation.jpg?key=${key}`,
                            alt: `Observation ${obs.name} at step ${item.step}` }));
    }
    if (obs.values) {
      body.push(el("div", { class: "sd-values code", "data-obs": obs.name },
        obs.values.slice(0, MAX_VALUES).map((v) => (typeof v === "number" ? +v.toPrecision(6) : v)).join("  ")));
    } else if (obs.summary) {
      const s = obs.summary;
      const out = el("div", { class: "sd-values code", "data-obs": obs.name },
        `${obs.size} values · min ${s.min} · max ${s.max} · mean ${(+s.mean).toPrecision(4)}`);
      const more = el("button", { class: "btn-link", type: "button", onclick: guard(async () => {
        const full = await api("GET", `${base}/observation?key=${key}`);
        out.textContent = full.values.map((v) => (typeof v === "number" ? +v.toPrecision(6) : v)).join("  ");
        more.remove();
      }) }, `Show all ${obs.size} values`);
      body.push(out, more);
    }
    return el("div", { class: "sd-obs" }, head, ...body);
  }

  function controlCell(c) {
    const who = c.source === "policy" ? "robot (policy)" : "player";
    return el("span", {}, el("strong", {}, who), " · player ", code(c.human), " · policy ",
      c.policy ? code(c.policy) : el("span", { class: "muted" }, "none"));
  }

  function renderStep(item) {
    const flags = ["is_first", "is_last", "is_terminal"].map((f) =>
      el("span", { class: `sd-flag ${item[f] ? "on" : ""}` }, `${f} ${item[f] ? "✓" : "·"}`));
    const action = item.action === null ? el("span", { class: "muted" }, "none (last step)")
      : el("span", {}, code(item.action), item.action_meaning ? el("strong", { class: "sd-meaning" }, ` ${item.action_meaning}`) : null);
    $("step-detail").replaceChildren(el("table", { class: "sd-table" }, el("tbody", {},
      row("Step", String(item.step)),
      row("Action", action),
      row("Input", ...inputCell(item.input)),
      row("Reward", code(item.reward)),
      row("Discount", code(item.discount)),
      row("Flags", ...flags),
      row("Latency", item.latency_ms === null
        ? el("span", { class: "muted" }, `not measured${item.latency_note ? `: ${item.latency_note}` : ""}`)
        : `${item.latency_ms} ms`),
      ...(item.speed == null ? [] : [row("Speed", item.speed === 1 ? "1× (the environment's fps)" : `${item.speed}×`)]),
      ...(item.control ? [row("Control", controlCell(item.control))] : []),
      ...(item.camera == null ? [] : [row("Camera", `${item.camera} (the frame's view; the observation is the same for every view)`)]),
      row("Stream quality", item.stream_quality == null ? el("span", { class: "muted" }, "not recorded (an older log)") : `JPEG ${item.stream_quality}`),
      ...(item.stream_every == null ? [] : [row("Stream rate",
        `1 frame in ${item.stream_every} streamed (adapted to the player's link); this step's was ${item.streamed ? "streamed" : "recorded only"}`)]),
      row("Info", code(item.info)),
      row("Observation", ...item.observation.map((o) => observationCell(item, o))),
    )));
  }

  // --- playback ------------------------------------------------------------------------
  async function delayAfter(n) {
    try {
      const [a, b] = await Promise.all([stepItem(n), stepItem(n + 1)]);
      const ms = a && b && a.time_ms !== null && b.time_ms !== null ? b.time_ms - a.time_ms : DEFAULT_MS;
      return Math.max(5, Math.min(1000, ms));
    } catch { return DEFAULT_MS; }
  }

  function play() {
    if (!state.episode || state.playing) return;
    state.playing = true; $("play-btn").textContent = "❚❚ Pause";
    const tick = async () => {
      if (!state.playing) return;
      if (state.step >= state.episode.steps - 1) { pause(); return; }
      const wait = await delayAfter(state.step);
      state.timer = setTimeout(() => { if (state.playing) { show(state.step + 1); tick(); } }, wait);
    };
    tick();
  }

  function pause() {
    state.playing = false; clearTimeout(state.timer);
    $("play-btn").textContent = "▶ Play";
  }

  // --- marking and tagging -------------------------------------------------------------
  function mark(which) {
    if (which === "start") { state.mark = state.step; state.markEnd = null; }
    else if (state.mark !== null) state.markEnd = state.step;
    else { state.mark = state.step; state.markEnd = state.step; }
    const r = range();
    $("st-start").value = r[0]; $("st-end").value = r[1];
    show(state.step);
  }

  function clearMark() { state.mark = null; state.markEnd = null; show(state.step); }

  function markRange(a, b) {
    state.mark = a; state.markEnd = b;
    $("st-start").value = a; $("st-end").value = b;
    show(state.step);
  }

  /** ``t``: the marked range, or else the current step (never the form's stale numbers). */
  async function tagKey() {
    const r = range() ?? [state.step, state.step];
    await tag(r[0], r[1]);
  }

  async function tag(start, end) {
    const name = $("st-name").value.trim();
    if (!name) { focusTagName(); toast("Type a step tag name first, then Enter.", "error"); return; }
    await api("POST", `/api/episodes/${state.episode.id}/step-tags`, { json: { name, start, end } });
    toast(start === end ? `Tagged step ${start} “${name}”.` : `Tagged steps ${start}..${end} “${name}”.`);
    state.mark = null; state.markEnd = null;
    await onEdited();
  }

  /** The tag name field, selected, for the next ``t``; Enter or Esc hands the keys back. */
  function focusTagName() {
    $("st-name").focus();
    $("st-name").select();
  }

  function onKey(event) {
    if (!state.episode || $("viewer").hidden) return;
    if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    const jump = event.shiftKey ? 10 : 1;
    const actions = {
      " ": () => (state.playing ? pause() : play()),
      ArrowLeft: () => { pause(); show(state.step - jump); },
      ArrowRight: () => { pause(); show(state.step + jump); },
      Home: () => { pause(); show(0); },
      End: () => { pause(); show(state.episode.steps - 1); },
      "[": () => mark("start"),
      "]": () => mark("end"),
      t: guard(tagKey),
      w: () => narrations.focus(),
      T: focusTagName,
      n: guard(() => onEpisode(1)),
      p: guard(() => onEpisode(-1)),
      s: guard(() => onOutcome("success")),
      f: guard(() => onOutcome("failure")),
      u: guard(() => onOutcome(null)),
      j: jumpToDivergence,
    };
    const action = actions[event.key];
    if (action) { event.preventDefault(); action(); }
  }

  // --- the replay verdict ----------------------------------------------------------------
  /** Where the replay diverged (``j``); null unless it did. */
  const divergence = () => {
    const ep = state.episode;
    return ep && ep.replay_verdict === "diverged" && ep.replay_step !== null ? ep.replay_step : null;
  };

  function jumpToDivergence() {
    const step = divergence();
    if (step === null) return;
    pause(); show(step);
  }

  /** Above the replay: whether re-simulating the episode reproduced its log (text only). */
  function showVerdict(ep) {
    const step = divergence();
    const message = ep.replay_message;
    // "step 3, reward: recorded 1.0, …": the banner names the step once
    const what = (message || "").replace(/^step \d+, /, "");
    const text = {
      diverged: `Replay diverged at step ${step}${what ? `: ${what}` : ""}`,
      not_replayable: `This episode could not be replayed${message ? `: ${message}` : ""}`,
      verified: "✓ Replay verified: every step re-simulated to the recorded values",
    }[ep.replay_verdict] ?? `Replay check pending${message ? ` (${message})` : ""}`;
    $("replay-verdict").className = `ep-verdict ep-verdict-${ep.replay_verdict}`;
    $("replay-verdict").setAttribute("role", ep.replay_verdict === "diverged" ? "alert" : "status");
    $("replay-verdict-text").textContent = text;
    $("replay-verdict").hidden = false;
    const jump = $("replay-jump");
    jump.hidden = step === null;
    jump.replaceChildren(...(step === null ? [] : [`Jump to step ${step} `, el("kbd", {}, "j")]));
  }

  // --- episodes --------------------------------------------------------------------------
  async function open(ep, step = 0) {
    pause();
    if (state.chart) { state.chart.destroy(); state.chart = null; }
    Object.assign(state, { episode: ep, pages: new Map(), mark: null, markEnd: null });
    $("viewer").hidden = false;
    $("viewer-id").textContent = `${ep.env_key} · ${ep.status} · ${ep.id}`;
    const ending = endingText(ep);
    $("replay-ending").hidden = !ending;
    $("replay-ending").textContent = ending ? `${ending[0].toUpperCase()}${ending.slice(1)} · ${ep.actions} steps` : "";
    $("step-slider").max = Math.max(0, ep.steps - 1);
    // the MP4 of what the player saw (made once the episode has ended)
    $("video-btn").hidden = ep.status === "recording" || !ep.steps;
    $("video-btn").href = `/api/episodes/${encodeURIComponent(ep.id)}/video.mp4`;
    showVerdict(ep);
    // the instruction the participant was given (the task the episode drew), as text
    $("replay-task").hidden = !ep.instruction;
    $("replay-task-text").textContent = ep.instruction || "";
    $("replay-task-text").title = ep.task_key || "";
    $("step-detail").replaceChildren();
    $("reward-chart").replaceChildren();
    showDrivers(ep, null);
    narrations.open(ep).catch((err) => toast(err.message, "error"));
    judgements.open(ep).catch((err) => toast(err.message, "error"));
    show(step);
    if (!ep.steps) return;
    $("chart-return").textContent = "loading…";
    const buckets = Math.min(4000, Math.max(100, $("reward-chart").clientWidth || 800));
    const profile = await api("GET", `/api/episodes/${ep.id}/rewards?buckets=${buckets}`);
    if (state.episode !== ep) return;  // another episode was opened meanwhile
    // the actions taken, as the list and the slider count them (the profile's total counts
    // the RLDS steps: one more, the final observation)
    $("chart-return").textContent = `return ${(+profile.return).toFixed(2)} over ${Math.max(profile.total - 1, 0)} steps`;
    showDrivers(ep, profile.control);
    state.chart = createChart($("reward-chart"), profile, {
      view: () => ({ step: state.step, tags: state.episode.step_tags, mark: range() }),
      onJump: (s) => { pause(); show(s); },
      onRange: markRange,
    });
  }

  /** Shared autonomy under the chart: who drove (the chart's strip), takeovers, a policy's
      failure. Hidden for episodes without a policy. */
  function showDrivers(ep, runs) {
    const box = $("chart-control");
    box.hidden = !runs && !ep.policy_error;
    if (box.hidden) return box.replaceChildren();
    const swatch = (who, text) => el("span", { class: "ep-driver" },
      el("span", { class: `ep-swatch ep-swatch-${who}` }), text);
    const steps = (who) => (runs || []).filter((r) => r[2] === who).reduce((n, r) => n + r[1] - r[0] + 1, 0);
    const taken = ep.interventions == null ? "" : `taken over ${ep.interventions}×`;
    const share = ep.intervention_share == null ? "" : ` (the player drove ${Math.round(ep.intervention_share * 100)}% of steps)`;
    box.replaceChildren(...[
      swatch("policy", `robot drove ${steps("policy")} steps`), swatch("human", `player drove ${steps("human")} steps`),
      el("span", {}, taken + share),
      ep.policy_error ? el("strong", { class: "ep-policy-error" }, `Policy failed: ${ep.policy_error}`) : null,
    ].filter(Boolean));
  }

  function close() {
    pause();
    if (state.chart) { state.chart.destroy(); state.chart = null; }
    $("viewer").hidden = true; state.episode = null; narrations.close(); judgements.close();
  }

  /** The episode was edited (tags, notes): keep the view, redraw tag ranges. */
  function update(ep) { state.episode = ep; showVerdict(ep); show(state.step); }

  const narrations = createNarrations({ api, guard, toast, replay: {
    range, clearMark, step: () => state.step, show: (n) => { pause(); show(n); } } });
  const judgements = createJudgements({ api, show: (n) => { pause(); show(n); } });
  $("step-slider").addEventListener("input", (e) => { pause(); show(Number(e.target.value)); });
  $("st-name").addEventListener("input", showTagHint);
  $("st-name").addEventListener("keydown", (event) => {
    // the name is set: back to the replay's keys (the form's own submit needs its button)
    if (event.key === "Enter" || event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      $("st-name").blur();
      showTagHint();
    }
  });
  $("prev-episode").addEventListener("click", guard(() => onEpisode(-1)));
  $("next-episode").addEventListener("click", guard(() => onEpisode(1)));
  $("play-btn").addEventListener("click", () => (state.playing ? pause() : play()));
  $("replay-jump").addEventListener("click", jumpToDivergence);
  document.addEventListener("keydown", onKey);

  return {
    open, close, update, show, tag,
    get episode() { return state.episode; },
    get step() { return state.step; },
  };
}
