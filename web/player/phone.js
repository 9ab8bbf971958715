/* The "Use your phone" panel: on a study whose controls read a paired phone, a QR code of
   the phone page's address (with its pairing ticket) and a short code to type instead; the
   phone's state (connected, lost), and the question when a second phone asks to take over.
   The server holds the pairing with the session, so a reload shows the phone still paired.
   The address is the server's public one (STUDIO_PUBLIC_URL) when set; one that names this
   machine only (127.0.0.1, localhost) is said to be out of a phone's reach, to a designer.
   A phone gets no panel. */
import { ask, enterAnswers } from "./questions.js";
import { $, isParticipant, send, state } from "./session.js";
import { onPhone } from "./words.js";

const WORDS = { none: "No phone connected yet", connected: "Phone connected", lost: "Phone lost — reconnecting…" };
let expiry = null;

function pair() { clearTimeout(expiry); send({ type: "phone_pair", origin: location.origin }); }

function setState(phone) {
  $("phone-state").dataset.state = phone;
  $("phone-state").textContent = WORDS[phone] || phone;
  $("phone-pairing").hidden = phone === "connected"; // a new code only when one is wanted
  $("phone-new").textContent = phone === "connected" ? "Pair another phone" : "New code";
}

/** Tell a designer (a test play, a preview as a participant) when no phone can open the
 *  pairing address (``host``: a loopback name, or ""): the operator's problem, so never a
 *  participant's, who reached the page at an address that works for them. */
function loopbackWarning(host) {
  const designer = !isParticipant() || Boolean(state.participant && state.participant.test);
  $("phone-unreachable").textContent = host && designer
    ? `A phone cannot reach ${host}: set STUDIO_PUBLIC_URL to this site's address on your network (docs/deploy.md), or open this page at that address.`
    : "";
  $("phone-unreachable").hidden = !(host && designer);
}

export const phoneHandlers = {
  /** On every hello: show the panel for a study that binds the phone and get a code (not
   *  on a phone: it would pair with itself). */
  phone_study(study) {
    if (onPhone()) { $("phone-panel").hidden = true; return; }
    $("phone-panel").hidden = !study.phone;
    if (study.phone && !state.phone) { state.phone = "none"; setState("none"); }
    if (study.phone && state.phone !== "connected") pair();
  },
  phone_pairing(m) {
    $("phone-qr").src = m.qr;
    $("phone-code").textContent = `${m.code.slice(0, 3)} ${m.code.slice(3)}`;
    const url = new URL(m.url);
    $("phone-address").textContent = `${url.host}/phone.html`;
    loopbackWarning(m.loopback ? url.hostname : "");
    $("phone-expiry").textContent = `The code works once, for ${Math.round(m.expires_s / 60)} minutes.`;
    clearTimeout(expiry);
    expiry = setTimeout(() => { if (state.phone !== "connected") pair(); }, m.expires_s * 1000);
  },
  phone(m) {
    const was = state.phone;
    state.phone = m.state;
    setState(m.state);
    const request = $("phone-request");
    if (m.request && request.hidden) {
      // beside the game: guarded, but the focus stays where the player is
      request.hidden = false;
      ask(request, { keys: enterAnswers(request, () => null), focus: false });
    }
    request.hidden = !m.request;
    if (was === "connected" && m.state === "lost") pair(); // ready for a re-pairing too
  },
};

$("phone-new").addEventListener("click", () => { $("phone-pairing").hidden = false; pair(); });
$("phone-accept").addEventListener("click", () => { $("phone-request").hidden = true; send({ type: "phone_confirm", accept: true }); });
$("phone-refuse").addEventListener("click", () => { $("phone-request").hidden = true; send({ type: "phone_confirm", accept: false }); });
