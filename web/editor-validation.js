// RLDS Studio, study editor: what Validate found for one environment (spaces, first frame,
// resolved controls, game speed, warnings and problems with their field paths).

import { el, problems } from "./api.js";

/** A space as text: "int64 scalar, 6 values" or "uint8 [210, 160, 3] in [0, 255]". */
export function describeSpace(space) {
  if (space === null || space === undefined) return "unknown";
  if (Array.isArray(space)) return `(${space.map(describeSpace).join(", ")})`;
  if (!("dtype" in space)) {
    return Object.entries(space).map(([key, sub]) => `${key}: ${describeSpace(sub)}`).join("; ");
  }
  const shape = space.shape.length ? `[${space.shape.join(", ")}]` : "scalar";
  let text = `${space.dtype} ${shape}`;
  if (space.num_values !== undefined) text += `, ${space.num_values} values`;
  else if (space.minimum !== undefined) text += ` in [${bound(space.minimum)}, ${bound(space.maximum)}]`;
  return text;
}

function bound(value) {
  const show = (v) => (v === null ? "∞" : String(v));
  if (!Array.isArray(value)) return show(value);
  const distinct = [...new Set(value.map(show))];
  return distinct.length === 1 ? distinct[0] : `${distinct.slice(0, 4).join(", ")}${distinct.length > 4 ? ", …" : ""}`;
}

function describeSpeed(speed) {
  if (!speed) return "unknown";
  if (speed.mode === "sync") return "turn-based (sync): one step per input";
  const pace = speed.frameskip
    ? `${speed.fps} fps × frameskip ${speed.frameskip} against ${speed.native_fps * speed.frameskip} Hz`
    : `${speed.fps} fps against ${speed.native_fps ?? "an unknown"} steps/s`;
  if (speed.effective === null || speed.effective === undefined) return `${speed.fps} fps (real pace unknown)`;
  const text = `${speed.effective.toFixed(2)}× real speed (${pace})`;
  return speed.note ? `${text}: ${speed.note}` : text;
}

function issueList(kind, items) {
  if (!items.length) return null;
  const lines = problems({ detail: items });
  return el("ul", { class: `problems validation-${kind}`, "aria-label": kind }, lines.map((line) => el("li", {}, line)));
}

/** One environment's report, as an article named "Validation of <name>". */
export function renderEnvReport(env) {
  const status = env.ok
    ? el("span", { class: "badge badge-active" }, env.warnings.length ? "builds, with warnings" : "builds")
    : el("span", { class: "badge badge-problem" }, "problems");
  const facts = el("dl", { class: "facts" });
  const fact = (term, value) => facts.append(el("dt", {}, term), el("dd", {}, value));
  if (env.observation_space) fact("Observation", describeSpace(env.observation_space));
  if (env.action_space) {
    const meanings = env.action_meanings ? ` (${env.action_meanings.join(", ")})` : "";
    fact("Actions", describeSpace(env.action_space) + meanings);
  }
  if (env.speed) fact("Speed", describeSpeed(env.speed));
  if (env.controls) {
    const labels = env.controls.labels || {};
    const bindings = Object.entries(env.controls.bindings).map(([name, value]) =>
      `${name} → ${JSON.stringify(value)}${labels[name] ? ` (${labels[name]})` : ""}`);
    fact("Controls", bindings.length ? bindings.join("; ") : "none");
  }
  if (env.cameras) fact("Cameras", env.cameras.join(", "));
  const frame = env.frame_url
    ? el("img", { class: "validation-frame", src: env.frame_url, alt: `First frame of ${env.name}` })
    : null;
  return el(
    "article",
    { class: "validation-env", "aria-label": `Validation of ${env.name}` },
    el("h4", {}, "Validation ", status,
      env.cached ? el("span", { class: "muted small" }, " · unchanged since the last check") : null),
    el("div", { class: "validation-body" }, frame, facts),
    issueList("problems", env.problems),
    issueList("warnings", env.warnings),
  );
}
