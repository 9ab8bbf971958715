/* On-screen touch buttons: where the study allows touch (crowd.inputs) and the environment
   has few key bindings (env_ready's controls.touch), a button per binding under the game.
   A tap sends exactly the keys of its binding, as pressing them would, so the recorded input
   is the key press's; each button shows its action and its keyboard key. */

const $ = (id) => document.getElementById(id);

/** A device that can touch (a phone, a tablet, a touch screen). */
export const canTouch = () => navigator.maxTouchPoints > 0 || matchMedia("(pointer: coarse)").matches;

/** Show the buttons of ``controls.touch`` (or hide the pad); ``input`` = {press, release}. */
export function renderTouch(state, controls, input) {
  const pad = $("touch-pad");
  const pads = (controls && controls.touch) || [];
  const allowed = Boolean(state.study && (state.study.inputs || []).includes("touch"));
  pad.hidden = !(allowed && pads.length && canTouch());
  pad.replaceChildren(...(pad.hidden ? [] : pads.map((binding) => button(binding, input))));
}

/** A button held while touched that sends ``binding.keys`` (its key shown when it has one). */
export function button(binding, input) {
  const btn = document.createElement("button");
  btn.type = "button";
  btn.className = "btn touch-btn";
  btn.dataset.keys = binding.keys.join("+");
  const label = document.createElement("span");
  label.textContent = binding.label;
  btn.append(label);
  if (binding.input) {
    const key = document.createElement("kbd");
    key.textContent = binding.input; // the keyboard shortcut stays in sight
    btn.append(key);
  }
  btn.setAttribute("aria-label", binding.input ? `${binding.label} (${binding.input})` : binding.label);
  let down = false;
  const up = (e) => {
    if (!down) return;
    down = false;
    btn.classList.remove("pressed");
    if (e) e.preventDefault();
    input.release(binding.keys);
  };
  btn.addEventListener("pointerdown", (e) => {
    e.preventDefault(); // no focus change, no mouse events after: the game keeps the keys
    if (down) return;
    down = true;
    btn.classList.add("pressed");
    if (btn.setPointerCapture) { try { btn.setPointerCapture(e.pointerId); } catch { /* gone */ } }
    input.press(binding.keys);
  });
  for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) btn.addEventListener(type, up);
  btn.addEventListener("contextmenu", (e) => e.preventDefault()); // a long press holds, no menu
  // a keyboard user reaching the button (Tab, then Enter or Space) gets one press too
  btn.addEventListener("click", (e) => {
    if (e.detail !== 0) return; // pointer clicks were handled on pointerdown
    input.press(binding.keys); input.release(binding.keys);
  });
  return btn;
}
