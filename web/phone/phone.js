/* The phone page: pair (a QR code's #ticket=…&replica=…, or the code typed), then a controller
   on its own socket (/ws/phone?replica=<the replica that runs the session>, which the load
   balancer routes on: docs/deploy.md): the motion axes while "Hold to move" is held,
   PhoneClutch and PhoneGrip while their buttons are down, sent at 20 Hz; zeros once let go.
   The axes come from the WebXR pose when the participant chose it (xr.js: six axes), else
   the tilt (motion.js: three) once its readings arrive, else the sliders; the page says which,
   and says "nothing yet" while no source gives readings. The socket reconnects
   by itself when it drops ("Phone lost — reconnecting"). docs/study-format.md. */
import { createApi } from "../shared/api.js";
import { renderTopbar } from "../shared/topbar.js";
import { createMotion } from "../shared/motion.js";
import { createXr, xrMode } from "./xr.js";

renderTopbar({ home: false, skipLink: false });

const $ = (id) => document.getElementById(id);
const api = createApi();
const SEND_MS = 50; // 20 Hz
const KEY = "rlds-phone-pairing"; // {ticket, replica}
const CLOSES = {
  4000: "Another phone is used for this study now.",
  4001: "The study session ended. To go on, pair again from the computer.",
};

const state = { ticket: null, replica: "", ws: null, connected: false, retries: 0, error: null, grip: false, slider: null, sentZero: true };
const sliderAxes = [0, 0, 0];
const motion = createMotion((text, offer) => {
  if (!xrOn()) $("motion-text").textContent = text || $("motion-text").dataset.help;
  $("pad-view").classList.toggle("no-motion", offer && !xrOn());
  if (offer) showSliders();
  showSource();
});
let xr = null; // the WebXR pose, once the participant chose it
const xrOn = () => xr !== null && xr.active;
const source = () => (xrOn() ? xr : motion);

/* --- screens ------------------------------------------------------------------------- */
function view(id) { for (const v of ["pair-view", "wait-view", "pad-view"]) $(v).hidden = v !== id; }
function setLink(stateName, text) { $("link-status").dataset.state = stateName; $("link-status").textContent = text; }
function showError(text) { $("phone-error").textContent = text || ""; $("phone-error").hidden = !text; }
function showSliders() { $("sliders").hidden = false; $("sliders-btn").hidden = true; showSource(); }
/* What moves the hand, as it is: the WebXR pose; the tilt only once the sensors' readings
   arrive (a browser may have the API and never send one); the sliders; or nothing yet. */
const SOURCES = {
  webxr: "Moves with: the WebXR pose (position and orientation)",
  orientation: "Moves with: tilt (device orientation)",
  both: "Moves with: tilt (device orientation), or a slider while you hold it",
  sliders: "Moves with: the on-screen sliders",
  none: "Moves with: nothing yet (no motion readings from this phone so far)",
};
function showSource() {
  const xrNow = xrOn(), sliders = !$("sliders").hidden;
  const kind = xrNow ? "webxr" : motion.heard ? (sliders ? "both" : "orientation") : sliders ? "sliders" : "none";
  $("motion-source").textContent = SOURCES[kind];
  $("motion-source").dataset.source = kind;
  $("axes-xr").hidden = !xrNow;
  $("xr-btn").hidden = xrNow || !state.xrMode;
}
async function useXr() {
  $("xr-btn").hidden = true;
  source().up();
  xr = createXr(state.xrMode, (text) => { if (!text) showSource(); }, (why) => {
    xr = null; // back to the tilt (or the sliders)
    $("motion-text").textContent = `${why} ${motion.heard ? "Back to tilting the phone." : "Use the on-screen sliders."}`;
    $("pad-view").classList.toggle("no-motion", !motion.heard);
    if (!motion.heard) showSliders();
    showSource();
  });
  try {
    await xr.start();
    $("pad-view").classList.remove("no-motion");
    $("motion-text").textContent = "Press and hold Hold to move, then move and turn the phone: the hand follows its moves and turns from where it was when you pressed. Let go to stop.";
  } catch (err) {
    xr = null;
    $("motion-text").textContent = `AR tracking could not start (${err.message || err}). ${motion.heard ? "Tilt the phone instead." : "Use the on-screen sliders."}`;
  }
  showSource();
}

/* --- the socket ---------------------------------------------------------------------- */
function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const route = state.replica ? `?replica=${encodeURIComponent(state.replica)}` : "";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/phone${route}`, ["rlds-studio-phone", `ticket.${state.ticket}`]);
  state.ws = ws;
  state.error = null;
  ws.onmessage = (ev) => { if (state.ws === ws) onMessage(JSON.parse(ev.data)); };
  ws.onclose = (ev) => { if (state.ws === ws) onClose(ev); };
}

function onMessage(m) {
  if (m.type === "phone_hello") {
    state.connected = true; state.retries = 0;
    showError(""); setLink("connected", "Phone connected");
    $("pair-code").value = ""; // used up: a new pairing needs a new code
    $("pad-study").textContent = m.study;
    view("pad-view");
  } else if (m.type === "waiting_confirm") {
    setLink("none", "Waiting for the computer");
    $("wait-text").textContent = m.message;
    view("wait-view");
  } else if (m.type === "error") {
    state.error = m;
  }
}

function onClose(ev) {
  state.ws = null;
  const was = state.connected;
  state.connected = false;
  release();
  const refused = ev.code === 1008 || ev.code === 4000 || ev.code === 4001;
  if (refused || (!was && state.retries >= 3)) {
    forget();
    showError(CLOSES[ev.code] || (state.error && capital(state.error.message)) || "The phone could not connect. Pair again from the computer.");
    setLink("none", "Not paired");
    view("pair-view");
    return;
  }
  state.retries++;
  setLink("lost", "Phone lost — reconnecting…");
  setTimeout(connect, Math.min(500 * state.retries, 4000));
}

const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1) + ".";
function forget() { state.ticket = null; state.replica = ""; sessionStorage.removeItem(KEY); }
function use({ ticket, replica }) {
  state.ticket = ticket; state.replica = replica || "";
  sessionStorage.setItem(KEY, JSON.stringify({ ticket, replica: state.replica }));
  connect();
}
function stored() {
  try { const saved = JSON.parse(sessionStorage.getItem(KEY) || "null"); return saved && saved.ticket ? saved : null; } catch { return null; }
}

/* --- input --------------------------------------------------------------------------- */
function axes() { return state.slider !== null ? sliderAxes : source().axes; }
function keys() { return [...(source().held ? ["PhoneClutch"] : []), ...(state.grip ? ["PhoneGrip"] : [])]; }

function tick() {
  const values = axes().map((v) => Math.round(v * 1000) / 1000);
  for (let i = 0; i < values.length; i++) $(`ax-${i}`).textContent = values[i].toFixed(2);
  const active = source().held || state.grip || state.slider !== null;
  if (!state.connected || !state.ws || (!active && state.sentZero)) return;
  state.ws.send(JSON.stringify({ type: "phone_input", axes: values, keys: keys() }));
  state.sentZero = !active;
}

function release() { motion.up(); if (xr) xr.up(); state.grip = false; state.slider = null; sliderAxes.fill(0); }

/** A button held with a finger (pointer capture: sliding off it does not let go). Its press
 *  and its release are each sent at once, not at the next 20 Hz tick: a tap shorter than
 *  that still reaches the game (docs/protocol.md, "Every press reaches a step"). */
function hold(button, down, up) {
  button.addEventListener("pointerdown", (e) => { e.preventDefault(); button.setPointerCapture(e.pointerId); down(); tick(); });
  for (const kind of ["pointerup", "pointercancel", "lostpointercapture"]) button.addEventListener(kind, () => { up(); tick(); });
  button.addEventListener("contextmenu", (e) => e.preventDefault()); // a long press is no menu
}

function wire() {
  $("motion-text").dataset.help = $("motion-text").textContent;
  hold($("clutch"), () => { source().down(); $("clutch").setAttribute("aria-pressed", "true"); },
    () => { motion.up(); if (xr) xr.up(); $("clutch").setAttribute("aria-pressed", "false"); });
  hold($("grip"), () => { state.grip = true; $("grip").classList.add("down"); },
    () => { state.grip = false; $("grip").classList.remove("down"); });
  for (let i = 0; i < 3; i++) {
    const slider = $(`sl-${i}`);
    slider.addEventListener("pointerdown", () => { state.slider = i; });
    slider.addEventListener("input", () => { sliderAxes[i] = Number(slider.value); });
    const back = () => { slider.value = "0"; sliderAxes[i] = 0; if (state.slider === i) state.slider = null; };
    for (const kind of ["pointerup", "pointercancel", "change"]) slider.addEventListener(kind, back);
  }
  $("sliders-btn").addEventListener("click", showSliders);
  $("motion-btn").hidden = !motion.needsPermission;
  $("motion-btn").addEventListener("click", () => { $("motion-btn").hidden = true; motion.enable(); });
  if (!motion.available) {
    $("motion-text").textContent = "This browser has no motion sensors: use the on-screen sliders.";
    $("pad-view").classList.add("no-motion");
    showSliders();
  } else if (!motion.needsPermission) motion.listen();
  $("xr-btn").addEventListener("click", useXr);
  showSource();
  xrMode().then((mode) => { state.xrMode = mode; $("xr-btn").dataset.mode = mode || "none"; showSource(); });
  $("pair-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    try {
      use(await api("POST", "/api/phone/pair", { json: { code: $("pair-code").value } }));
    } catch (err) {
      showError(err.message);
    }
  });
  setInterval(tick, SEND_MS);
  setInterval(() => { if (state.connected && state.ws) state.ws.send('{"type":"ping"}'); }, 15000);
}

wire();
const link = new URLSearchParams(location.hash.slice(1));
const fromLink = link.get("ticket") ? { ticket: link.get("ticket"), replica: link.get("replica") } : null;
if (fromLink) history.replaceState(null, "", location.pathname); // the ticket leaves the address bar
const pairing = fromLink || stored();
if (pairing) { setLink("none", "Connecting…"); use(pairing); } else $("pair-code").focus();
