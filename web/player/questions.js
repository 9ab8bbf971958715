/* Questions on the player's screen — the save dialog, the panel after an episode, the cancel
   question, a second phone's request, "open in another tab" — are answered by the player,
   never by a game key still in their hands (docs/protocol.md, "Questions"). A question opens
   with the focus on itself, not on a button; for GUARD_MS its buttons are disabled and no key
   answers it; then it takes only its own keys. Space never answers, nor does an auto-repeat
   or a key that was already down when the question opened. */

export const GUARD_MS = 600;

const ENTER = new Set(["Enter", "NumpadEnter"]);
const asked = new Map(); // element -> {keys, scope, held, ready, timer}
const down = new Set(); // codes this page saw go down and not yet up

const shown = (el) => (el.tagName === "DIALOG" ? el.open : !el.hidden && el.checkVisibility());
const isControl = (el) => ["INPUT", "SELECT", "TEXTAREA", "BUTTON", "A"].includes(el.tagName);
/** A box the player types in (the narration's text): Space is a space there. */
const typing = (el) => el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text");

/** The keys of the page, outside its form controls (the cancel question and the panel after
    an episode take them while they are on screen; a modal dialog takes every key). */
export const pageKeys = (el) => (target) => el.contains(target) || !isControl(target);
export const allKeys = () => true;

/** Enter: the focused button of ``el`` when the player moved to one, else ``primary``. */
export function enterAnswers(el, primary) {
  return (e) => (ENTER.has(e.code) ? (el.contains(e.target) && e.target.tagName === "BUTTON" ? e.target : primary()) : null);
}

/** Open (or open again) the question ``el``: ``keys(e)`` names the button a key answers with
    (null: not one of its keys); ``scope(target)`` the key events it takes (default: those
    inside it); ``focus`` false leaves the focus where it is (a request beside a game). */
export function ask(el, { keys = () => null, scope = (t) => el.contains(t), focus = true } = {}) {
  settle(el);
  const q = { keys, scope, held: new Set(down), ready: false, timer: null };
  asked.set(el, q);
  el.dataset.guard = "on";
  for (const button of el.querySelectorAll("button:not(:disabled)")) {
    button.disabled = true; button.dataset.guarded = "true";
  }
  q.timer = setTimeout(() => { q.ready = true; release(el); }, GUARD_MS);
  watcher.observe(el, { attributes: true, attributeFilter: ["hidden", "open"] });
  if (focus) el.focus({ preventScroll: true });
}

/** The question is gone (answered, or its screen left): its buttons work again. */
export function settle(el) {
  const q = asked.get(el);
  if (!q) return;
  clearTimeout(q.timer);
  asked.delete(el);
  release(el);
}

/** Is a question on screen (guarded or not)? */
export const anyOpen = () => [...asked.keys()].some(shown);

function release(el) {
  delete el.dataset.guard;
  for (const button of el.querySelectorAll("button[data-guarded]")) {
    button.disabled = false; delete button.dataset.guarded;
  }
}

// a question hidden or closed, however that happened, is settled
const watcher = new MutationObserver((records) => {
  for (const { target } of records) if (asked.has(target) && !shown(target)) settle(target);
});

/** The question that takes this key event: the newest one on screen whose scope has it. */
function taker(e) {
  const open = [...asked.entries()].reverse();
  const found = open.find(([el, q]) => shown(el) && q.scope(e.target));
  return found || [null, null];
}

window.addEventListener("keydown", (e) => {
  const [el, q] = taker(e);
  const fresh = !e.repeat && !down.has(e.code);
  if (!e.repeat) down.add(e.code);
  if (!q) return;
  const before = q.held.has(e.code); // down when the question opened
  if (!e.repeat) q.held.delete(e.code); // it went up unseen: this press is new, the next counts
  if (e.code === "Space") {
    if (el.contains(e.target) && !typing(e.target)) e.preventDefault(); // no button click, no scrolling
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const button = q.keys(e);
  if (!button) return;
  e.preventDefault();
  e.stopPropagation(); // the game and the page's own keys never see it
  if (q.ready && fresh && !before && !button.disabled && !button.hidden) button.click();
}, true);

window.addEventListener("keyup", (e) => {
  down.delete(e.code);
  for (const q of asked.values()) q.held.delete(e.code);
  // a button activates on Space's keyup: a question's never does
  if (e.code === "Space" && !typing(e.target)) for (const el of asked.keys()) if (el.contains(e.target)) e.preventDefault();
}, true);

window.addEventListener("blur", () => down.clear()); // keys let go elsewhere are not seen
