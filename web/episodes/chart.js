// Reward profile of a replayed episode, drawn with uPlot (web/vendor/uplot, a classic script
// that defines the global ``uPlot``): per-step reward and cumulative return, step tags as
// ranges, the marked range, the current step as a cursor. Click jumps; drag marks a range.

const TAG_FILL = "rgba(37, 99, 235, 0.16)";
const MARK_FILL = "rgba(245, 158, 11, 0.30)";
const CURSOR = "#111827";
// shared autonomy: who drove, a strip along the top of the plot (its legend, under the chart,
// uses the same colours: episodes.css .ep-swatch-*)
const DRIVER_FILL = { policy: "rgba(29, 78, 216, 0.85)", human: "rgba(194, 65, 12, 0.85)" };
const DRIVER_BAND = { policy: "rgba(29, 78, 216, 0.07)", human: "rgba(194, 65, 12, 0.10)" };
const STRIP = 10; // px (device pixels are scaled below)

/** Points ``[[step, value], ...]`` of two series on one x axis (uPlot's aligned data). */
function align(reward, cumulative) {
  const xs = [...new Set([...reward.map((p) => p[0]), ...cumulative.map((p) => p[0])])]
    .sort((a, b) => a - b);
  const r = new Map(reward), g = new Map(cumulative);
  return [xs, xs.map((x) => r.get(x) ?? null), xs.map((x) => g.get(x) ?? null)];
}

/**
 * A chart in ``box``: ``view()`` gives {step, tags, mark:[a,b]|null, total}; ``onJump(step)``
 * and ``onRange(a, b)`` are called on click and drag.
 */
export function createChart(box, profile, { view, onJump, onRange }) {
  const width = () => Math.max(300, box.clientWidth);
  const band = (u, a, b, fill) => {
    const x0 = u.valToPos(a - 0.5, "x", true), x1 = u.valToPos(b + 0.5, "x", true);
    u.ctx.fillStyle = fill;
    u.ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
  };
  const draw = (u) => {
    const v = view();
    u.ctx.save();
    for (const [a, b, who] of profile.control || []) {
      band(u, a, b, DRIVER_BAND[who]);
      const x0 = u.valToPos(a - 0.5, "x", true), x1 = u.valToPos(b + 0.5, "x", true);
      u.ctx.fillStyle = DRIVER_FILL[who];
      u.ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), STRIP * devicePixelRatio);
    }
    v.tags.forEach((t) => band(u, t.start, t.end, TAG_FILL));
    if (v.mark) band(u, v.mark[0], v.mark[1], MARK_FILL);
    const x = Math.round(u.valToPos(v.step, "x", true));
    u.ctx.fillStyle = CURSOR;
    u.ctx.fillRect(x - 1, u.bbox.top, 2, u.bbox.height);
    u.ctx.restore();
  };
  const opts = {
    width: width(), height: 200,
    scales: { x: { time: false, range: [0, Math.max(1, profile.total - 1)] } },
    legend: { live: true },
    cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
    series: [
      { label: "step" },
      { label: "reward", stroke: "#2563eb", width: 1, scale: "r", spanGaps: true },
      { label: "return", stroke: "#059669", width: 1.5, scale: "g", spanGaps: true },
    ],
    axes: [{}, { scale: "r", label: "reward", size: 60 },
           { scale: "g", side: 1, label: "return", size: 70, grid: { show: false } }],
    hooks: { draw: [draw] },
  };
  // global from the vendored classic script
  const u = new window.uPlot(opts, align(profile.reward, profile.cumulative), box);
  const stepAt = (offsetX) => Math.round(u.posToVal(offsetX, "x"));
  const clamp = (s) => Math.max(0, Math.min(profile.total - 1, s));
  let down = null;
  u.over.addEventListener("mousedown", (e) => { down = e.offsetX; });
  u.over.addEventListener("mouseup", (e) => {
    if (down === null) return;
    const a = clamp(stepAt(Math.min(down, e.offsetX))), b = clamp(stepAt(Math.max(down, e.offsetX)));
    const dragged = Math.abs(e.offsetX - down) > 3;
    down = null;
    if (dragged) onRange(a, b); else onJump(clamp(stepAt(e.offsetX)));
  });
  const resize = new ResizeObserver(() => u.setSize({ width: width(), height: 200 }));
  resize.observe(box);
  return {
    redraw: () => u.redraw(false),
    destroy: () => { resize.disconnect(); u.destroy(); },
    /** The canvas x (CSS px, relative to the plotting area) of a step: for tests and focus. */
    xOf: (step) => u.valToPos(step, "x"),
  };
}
