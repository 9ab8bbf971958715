/* Words that fit the device: a touch-only device (a phone, a tablet without a keyboard) is
   told to tap what a computer's player presses a key for. The keys' hints (kbd) are hidden on
   such a device by player.css, under the same media query. */

import { canTouch } from "./touch.js";

const TOUCH_ONLY = "(hover: none) and (pointer: coarse)";

/** A device whose only pointer is a finger (no mouse to hover, no keyboard assumed). */
export const touchOnly = () => matchMedia(TOUCH_ONLY).matches;

/** A phone: a device that can touch (as the game buttons ask: touch.js) with a narrow screen
 *  (its shorter side under 600 px, held either way). The page then shows only what a phone
 *  uses (body[data-device="phone"] in player.css): no keyboard or mouse hints, no pairing. */
export const onPhone = () => canTouch() && Math.min(screen.width, screen.height) < 600;

/** ``touch`` on a touch-only device, else ``keys``. */
export const tapOr = (touch, keys) => (touchOnly() ? touch : keys);

/** The game's overlay per phase: what to do next, in this device's words. */
export function overlays() {
  return tapOr({
    paused: "Paused — tap Resume to continue", idle: "Tap Start to start", starting: "Starting…",
    ended: "Episode over", ready: "Tap the game or Start to start",
  }, {
    paused: "Paused — press Esc or Resume to continue", idle: "Press Enter to start",
    starting: "Starting…", ended: "Episode over", ready: "Press Enter, any game key or gamepad A to start",
  });
}

/** The pause's overlay where the participant may end the episode ("I'm done"). */
export const pausedDone = () => tapOr("Paused — tap Resume to continue, or I'm done to end the episode",
  "Paused — press Esc or Resume to continue, or X / I'm done to end the episode");

/** The overlay after an episode, under ``label`` (the way on's button). */
export const nextPrompt = (label) => `${label} — ${tapOr("tap the button below", "press Enter")}`;
