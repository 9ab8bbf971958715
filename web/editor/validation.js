// RLDS Studio, study editor: what Validate found for one environment (spaces, first frame,
// resolved controls, game speed, its policy's time a step, warnings and problems with their
// field paths).

import { el } from "../shared/api.js";
import { inWords, labelFor } from "./fieldmarks.js";

const num = (v) => (Number.isInteger(v) ? String(v) : String(+v.toPrecision(6)).replace("-", "−"));
// JSON has no infinity: an unbounded low is null (−∞), an unbounded high null (∞)
const low = (v) => (v === null ? "−∞" : num(v));
const high = (v) => (v === null ? "∞" : num(v));
const MAX_DIMS = 32; // dimensions listed one by one; more are summed up

/** A space as text: "int64 scalar, 3 values (0 to 2)", "uint8 [210, 160, 3] in [0, 255]",
 *  "float32 [4]" (its per-dimension bounds: :func:`spaceDetail`). */
export function describeSpace(space) {
  if (space === null || space === undefined) return "unknown";
  if (Array.isArray(space)) return `(${space.map(describeSpace).join(", ")})`;
  if (!("dtype" in space)) {
    return Object.entries(space).map(([key, sub]) => `${key}: ${describeSpace(sub)}`).join("; ");
  }
  const shape = space.shape.length ? `[${space.shape.join(", ")}]` : "scalar";
  let text = `${space.dtype} ${shape}`;
  if (space.num_values !== undefined) {
    const first = Number(space.minimum ?? 0);
    text += `, ${space.num_values} values (${first} to ${first + space.num_values - 1})`;
  } else if (space.minimum !== undefined) {
    const lows = [space.minimum].flat(), highs = [space.maximum].flat();
    const same = (a) => a.every((v) => v === a[0]);
    if (same(lows) && same(highs)) text += ` in [${low(lows[0])}, ${high(highs[0])}]`;
  }
  return text;
}

/** The low and high of each dimension of a box whose bounds differ per dimension, or null. */
export function spaceDetail(space) {
  if (!space || !("dtype" in space) || !Array.isArray(space.minimum)) return null;
  const lows = space.minimum, highs = space.maximum;
  if (lows.every((v) => v === lows[0]) && highs.every((v) => v === highs[0])) return null;
  const rows = lows.slice(0, MAX_DIMS).map((v, i) => el("tr", {},
    el("th", { scope: "row" }, String(i)), el("td", {}, low(v)), el("td", {}, high(highs[i]))));
  const more = lows.length > MAX_DIMS ? el("caption", { class: "muted small" }, `first ${MAX_DIMS} of ${lows.length} dimensions`) : null;
  return el("table", { class: "space-dims", "aria-label": "Bounds per dimension" }, more,
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "dim"), el("th", { scope: "col" }, "low"), el("th", { scope: "col" }, "high"))),
    el("tbody", {}, rows));
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

const ms = (v) => (v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`);

/** The policy's trial (``report.policy``): its time a step against the budget, or why it
 *  stopped; ``level``: "" (fine), "warning" (over its budget) or "problem" (it failed). */
function describePolicy(policy) {
  const name = policy.id, budget = ms(policy.budget_ms);
  if (policy.failed) return { level: "problem", text: `${name} failed: ${policy.error}` };
  if (policy.median_ms === null) return { level: "", text: `${name} was not timed` };
  const per = `${name}: ${ms(policy.median_ms)} per step`;
  if (policy.over_budget) {
    const stopped = policy.error ? `; stopped: ${policy.error.replace(/^PolicyFailure: /, "")}` : "";
    return { level: "warning", text: `${per}, over its ${budget} budget (slowest ${ms(policy.worst_ms)})${stopped}` };
  }
  if (policy.worst_ms > policy.budget_ms) {
    return { level: "warning", text: `${per} (budget ${budget}); its slowest took ${ms(policy.worst_ms)}: a step over the budget hands control to the participant for the episode` };
  }
  return { level: "", text: `${per} (budget ${budget})` };
}

function issueList(kind, items) {
  if (!items.length) return null;
  const lines = items.map((item) => inWords(labelFor(item.loc), item.msg)); // of this environment: its name is above
  return el("ul", { class: `problems validation-${kind}`, "aria-label": kind }, lines.map((line) => el("li", {}, line)));
}

/** One environment's report, as an article named "Validation of <name>". */
export function renderEnvReport(env) {
  const status = env.ok
    ? el("span", { class: "badge badge-active" }, env.warnings.length ? "builds, with warnings" : "builds")
    : el("span", { class: "badge badge-problem" }, "problems");
  const facts = el("dl", { class: "facts" });
  const fact = (term, ...value) => facts.append(el("dt", {}, term), el("dd", {}, ...value));
  const policy = env.policy ? describePolicy(env.policy) : null;
  if (env.observation_space) {
    fact("Observation", el("span", {}, describeSpace(env.observation_space)), spaceDetail(env.observation_space));
  }
  if (env.action_space) {
    const meanings = env.action_meanings ? `: ${env.action_meanings.map((m, i) => `${i} ${m}`).join(", ")}` : "";
    fact("Actions", el("span", {}, describeSpace(env.action_space) + meanings), spaceDetail(env.action_space));
  }
  if (env.speed) fact("Speed", describeSpeed(env.speed));
  if (env.controls) {
    const labels = env.controls.labels || {};
    const bindings = Object.entries(env.controls.bindings).map(([name, value]) =>
      `${name} → ${JSON.stringify(value)}${labels[name] ? ` (${labels[name]})` : ""}`);
    fact("Controls", bindings.length ? bindings.join("; ") : "none");
  }
  if (env.cameras) fact("Cameras", env.cameras.join(", "));
  if (policy) {
    facts.append(el("dt", {}, "Policy"),
      el("dd", { class: policy.level ? `fact-${policy.level}` : "", dataset: { fact: "policy" } }, policy.text));
  }
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
