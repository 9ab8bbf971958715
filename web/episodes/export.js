// The episodes page's export dialog: before it starts, what the export writes and leaves out
// and whether the selected environments' spaces fit one dataset (the server's preview); one
// dataset per environment offered when they do not; then the job's progress (docs/review.md).
import { el } from "../shared/api.js";
import { createJobView } from "../shared/jobs.js";

const $ = (id) => document.getElementById(id);
const plural = (n) => `${n} episode${n === 1 ? "" : "s"}`;

/** The dialog on ``page = {api, study, state, toast, guard, pageFilter, filterSelection}``:
 *  ``preview()`` after the list or the selection changed, ``bind()`` once. */
export function createExport({ api, study, state, toast, guard, pageFilter, filterSelection }) {
  const useChecked = () => document.querySelector("input[name=ex-sel]:checked").value === "checked";
  const jobView = createJobView({ prefix: "job", api, toast, startButton: $("ex-start") });

  /** What the export form selects: the checked rows, or the list's filter (with "Only
   *  verified episodes": those whose replay matched their log). */
  function selection() {
    if (useChecked()) {
      return { episode_ids: [...state.checked], include_excluded: $("ex-include-excluded").checked };
    }
    const sel = filterSelection();
    if ($("ex-verified")?.checked) sel.replay_verdicts = ["verified"];
    return sel;
  }

  /** The regeneration the form asks for (docs/export.md, "Regenerated observations"), or
   *  null: a size in px and/or cameras (comma separated) draw the observations again. */
  function regenerate() {
    if (!$("ex-regen")?.checked) return null;
    const out = {};
    const size = $("ex-regen-size").value.trim();
    if (size) out.image_size = Number(size);
    const cameras = $("ex-regen-cameras").value.split(",").map((c) => c.trim()).filter(Boolean);
    if (cameras.length) out.cameras = cameras;
    return Object.keys(out).length ? out : null;
  }

  /** The regeneration's and the verified-only controls, added to the form once. */
  function addControls() {
    if ($("ex-regen")) return;
    const size = el("input", { id: "ex-regen-size", type: "number", min: "32", max: "1024", step: "1", placeholder: "e.g. 224", class: "small" });
    const cameras = el("input", { id: "ex-regen-cameras", placeholder: "as recorded (e.g. front, wrist)" });
    const fields = el("div", { id: "ex-regen-fields", class: "ex-regen-fields" },
      el("label", {}, "Image size (px) ", size), " ", el("label", {}, "Cameras ", cameras));
    fields.hidden = true;
    const box = el("input", { type: "checkbox", id: "ex-regen" });
    box.addEventListener("change", () => { fields.hidden = !box.checked; });
    const regen = el("fieldset", { class: "ex-regen" },
      el("legend", {}, "Observations"),
      el("label", { title: "Replays each episode with its seed and recorded actions; an episode that diverges is left out and listed" },
        box, " Regenerate by replay at another size or from other cameras (PickCube, Robosuite)"),
      fields);
    const verified = el("label", { title: "Episodes whose background replay matched their log (with All matching the filters)" },
      el("input", { type: "checkbox", id: "ex-verified" }), " Only verified episodes");
    const anchor = $("ex-preview");
    anchor.before(verified, regen);
  }

  /** The export's options as the form sets them ("tfds-oxe": tfds with the OXE profile). */
  function options() {
    const [format, profile] = $("ex-format").value.split("-");
    const out = {
      format, archive: $("ex-archive").value, engine: $("ex-engine").value,
      strip_step_metadata: $("ex-strip").checked,
      videos: $("ex-videos").checked,
      end_tags: $("ex-end").value.split(",").map((s) => s.trim()).filter(Boolean),
    };
    if (profile) out.profile = profile;
    const regen = regenerate();
    if (regen) out.regenerate = regen;
    if ($("ex-name").value.trim()) out.name = $("ex-name").value.trim();
    return out;
  }

  let asked = 0;
  /** How many of the listed episodes the export writes, which it leaves out and why (the
   *  server's one definition of each: server/services/review/counts.py), and what it does with
   *  environments of different spaces. The answer, or null when a newer one is coming. */
  async function preview() {
    const mine = ++asked;
    const sel = selection();
    if (sel.episode_ids && !sel.episode_ids.length) { $("ex-preview").textContent = "Check some episodes first."; return null; }
    const out = await api("POST", `/api/studies/${study}/exports/preview`,
      { json: { listed: pageFilter(), selection: sel, options: options() } });
    if (mine !== asked) return null;
    const head = `Exports ${plural(out.exported)} of the ${out.listed} ${sel.episode_ids ? "checked" : "listed"}.`;
    const spaces = out.spaces && out.spaces.mixed
      ? [el("span", { class: `ex-spaces ex-spaces-${out.spaces.split}` }, ` ${out.spaces.message}`)] : [];
    $("ex-preview").replaceChildren(el("strong", {}, head), ...spaces, ...out.left_out.map((r) => el("span", { class: "ex-left-out" },
      ` Leaves out ${plural(r.count)}, ${r.reason}: `,
      el("span", { class: "code small" }, r.episode_ids.map((id) => id.slice(0, 8)).join(", ") + (r.count > r.episode_ids.length ? " …" : "")),
      ".")));
    if (!out.spaces || out.spaces.split !== "offer") $("split-offer").hidden = true;
    return out;
  }

  /** Start: the preview first; environments one dataset cannot hold get the offer of one
   *  dataset per environment (or the reason this format cannot), without a failing request. */
  async function start(event, { split = false } = {}) {
    event?.preventDefault();
    $("split-offer").hidden = true;
    if (useChecked() && !state.checked.size) { toast("Check some episodes first.", "error"); return; }
    if (!split) {
      const out = await preview();
      if (!out) return;
      if (out.exported === 0) { // said before any job starts, in words (not a refused request)
        toast(`Nothing to export: none of the ${out.listed} ${useChecked() ? "checked" : "listed"} episodes would be written. ${out.left_out.length ? "See what it leaves out and why above." : ""}`.trim(), "error");
        return;
      }
      if (out.spaces?.split === "impossible") { toast(out.spaces.message, "error"); return; }
      if (out.spaces?.split === "offer") {
        $("split-text").textContent = `${out.spaces.message} Export one dataset per environment?`;
        $("split-offer").hidden = false;
        $("split-go").focus();
        return;
      }
    }
    const opts = options();
    if (split) opts.split_by_env = true;
    const job = await api("POST", `/api/studies/${study}/exports`, { json: { selection: selection(), options: opts } });
    jobView.show(job); jobView.follow(job.id);
  }

  function bind() {
    addControls();
    $("export-form").addEventListener("submit", guard(start));
    $("export-form").addEventListener("change", guard(preview));
    $("split-go").addEventListener("click", guard(() => start(null, { split: true })));
    $("split-dismiss").addEventListener("click", () => { $("split-offer").hidden = true; });
    jobView.bindCancel(guard);
  }

  return { preview, bind, useChecked };
}
