// The datasets page's Edits section: edits of the dataset shown that never change a
// recorded value (POST/PUT/DELETE /api/datasets/{id}/edits): per episode a trim (RLDS steps
// dropped first and last) and an exclusion with its reason, per task a relabel (its new
// instruction); the list of edits with who made each and when, and Remove. A problem is
// shown at its field (a 422's detail) or above the section (a 409: someone edited first);
// after each change ``onChange()`` redraws the preview (its counts apply the edits).
import { ApiError, el, showError } from "../shared/api.js";
import { timeElement } from "../studio/ui.js";

const $ = (id) => document.getElementById(id);
const short = (id) => id.slice(0, 8);

/** The section on ``{api, toast, guard, onChange}``: ``show(dataset, preview)``. */
export function createDatasetEdits({ api, toast, guard, onChange }) {
  let dataset = null;
  let edits = [];

  const url = (suffix = "") => `/api/datasets/${dataset.id}/edits${suffix}`;
  const find = (kind, key, value) => edits.find((e) => e.kind === kind && e[key] === value);

  function field(name, label, attrs) {
    const input = el("input", { name, "aria-label": label, ...attrs });
    const error = el("p", { class: "field-error", hidden: true, dataset: { errorFor: name } });
    return el("span", { class: "de-field", dataset: { field: name } }, input, error);
  }

  function clearErrors(row) {
    for (const p of row.querySelectorAll(".field-error")) { p.hidden = true; p.textContent = ""; }
    for (const i of row.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
  }

  /** Send an edit; a 422's problems at the row's fields, a 409 above the section. */
  async function send(row, method, path, body, done) {
    clearErrors(row);
    showError($("edits-error"), null);
    try {
      await api(method, path, { json: body });
    } catch (err) {
      if (err instanceof ApiError && err.status === 422 && Array.isArray(err.body?.detail)) {
        let placed = false;
        for (const d of err.body.detail) {
          const name = d.loc?.[d.loc.length - 1];
          const box = row.querySelector(`[data-field="${name}"]`);
          if (!box) continue;
          box.querySelector("input").setAttribute("aria-invalid", "true");
          const p = box.querySelector(".field-error");
          p.textContent = d.msg;
          p.hidden = false;
          placed = true;
        }
        if (!placed) showError($("edits-error"), err);
        return;
      }
      if (err instanceof ApiError && err.status === 409) {
        showError($("edits-error"), err);
        await load();
        return;
      }
      throw err;
    }
    toast(done);
    await refresh();
  }

  /** The preview's counts drawn again (``onChange``), then this section with them. */
  async function refresh() {
    const out = await onChange();
    if (out) preview = out;
    await load();
  }

  const number = (input) => (input.value.trim() === "" ? 0 : Number(input.value));

  function episodeRow(a, excludedReason) {
    const trim = find("trim", "episode_id", a.episode_id);
    const excluded = find("exclude", "episode_id", a.episode_id);
    const start = field("trim_start", `Trim start of ${short(a.episode_id)}`,
      { type: "number", min: "0", step: "1", value: String(trim?.trim_start ?? 0), class: "de-num" });
    const end = field("trim_end", `Trim end of ${short(a.episode_id)}`,
      { type: "number", min: "0", step: "1", value: String(trim?.trim_end ?? 0), class: "de-num" });
    const reason = field("reason", `Exclusion reason for ${short(a.episode_id)}`,
      { type: "text", maxlength: "2000", value: excluded?.reason ?? "", placeholder: "why" });
    const row = el("tr", { dataset: { episode: a.episode_id } });
    const steps = a.recorded_steps && a.steps !== a.recorded_steps ? `${a.steps} of ${a.recorded_steps}` : String(a.steps ?? a.recorded_steps ?? "");
    const doTrim = guard(() => {
      const values = { trim_start: number(start.querySelector("input")), trim_end: number(end.querySelector("input")) };
      return trim
        ? send(row, "PUT", url(`/${trim.id}`), values, `Trim of ${short(a.episode_id)} replaced.`)
        : send(row, "POST", url(), { kind: "trim", episode_id: a.episode_id, ...values }, `Trimmed ${short(a.episode_id)}.`);
    });
    const doExclude = guard(() => {
      const body = { reason: reason.querySelector("input").value };
      return excluded
        ? send(row, "PUT", url(`/${excluded.id}`), body, `Reason for ${short(a.episode_id)} replaced.`)
        : send(row, "POST", url(), { kind: "exclude", episode_id: a.episode_id, ...body }, `Excluded ${short(a.episode_id)}.`);
    });
    row.append(
      el("th", { scope: "row" }, el("code", { title: a.episode_id }, short(a.episode_id))),
      el("td", {}, a.split), el("td", {}, a.task_key || "no task"),
      el("td", { class: "right", dataset: { col: "steps" } }, excludedReason != null ? `excluded: ${excludedReason}` : steps),
      el("td", {}, start), el("td", {}, end),
      el("td", {}, el("button", { type: "button", class: "btn btn-small", onclick: doTrim }, trim ? "Replace trim" : "Trim")),
      el("td", {}, reason),
      el("td", {}, el("button", { type: "button", class: "btn btn-small", onclick: doExclude }, excluded ? "Replace reason" : "Exclude")));
    return row;
  }

  function taskRow(t) {
    const relabel = find("relabel", "task_key", t.key);
    const text = field("instruction", `New instruction for ${t.label}`,
      { type: "text", maxlength: "2000", value: relabel?.instruction ?? "", class: "de-text" });
    const row = el("tr", { dataset: { task: t.key } });
    const doRelabel = guard(() => {
      const body = { instruction: text.querySelector("input").value };
      return relabel
        ? send(row, "PUT", url(`/${relabel.id}`), body, `Relabel of ${t.label} replaced.`)
        : send(row, "POST", url(), { kind: "relabel", task_key: t.key, ...body }, `Relabelled ${t.label}.`);
    });
    row.append(el("th", { scope: "row" }, t.label), el("td", {}, text),
      el("td", {}, el("button", { type: "button", class: "btn btn-small", onclick: doRelabel }, relabel ? "Replace" : "Relabel")));
    return row;
  }

  function what(e) {
    if (e.kind === "trim") return `${e.trim_start} first, ${e.trim_end} last`;
    if (e.kind === "relabel") return e.instruction;
    return e.reason;
  }

  function renderList() {
    $("edits-empty").hidden = edits.length > 0;
    $("edits-table").hidden = edits.length === 0;
    $("edits-body").replaceChildren(...edits.map((e) => el("tr", { dataset: { edit: e.id, kind: e.kind } },
      el("td", {}, e.kind),
      el("td", {}, e.episode_id ? el("code", { title: e.episode_id }, short(e.episode_id)) : `task ${e.task_key}`),
      el("td", {}, what(e)), el("td", {}, e.author_email), el("td", {}, timeElement(e.created_at)),
      el("td", { class: "ds-actions" }, el("button", {
        type: "button", class: "btn btn-small btn-danger-outline", "aria-label": `Remove ${e.kind} of ${e.episode_id ? short(e.episode_id) : e.task_key}`,
        onclick: guard(async () => {
          await api("DELETE", url(`/${e.id}`));
          toast(`Removed the ${e.kind}.`);
          await refresh();
        }),
      }, "Remove")))));
  }

  let preview = null;
  function render() {
    if (!preview) return;
    const excluded = new Map(preview.edits.excluded.map((x) => [x.episode_id, x]));
    const rows = [...preview.assignments, ...preview.edits.excluded];
    $("edits-episodes").replaceChildren(...rows.map((a) =>
      episodeRow({ ...a, recorded_steps: a.recorded_steps ?? a.steps }, excluded.get(a.episode_id)?.reason ?? null)));
    $("edits-tasks").replaceChildren(...preview.tasks.filter((t) => t.key).map(taskRow));
    $("edits-no-tasks").hidden = preview.tasks.some((t) => t.key);
    renderList();
  }

  async function load() {
    edits = await api("GET", url());
    render();
  }

  /** Show the section for ``shown`` with ``out``, its preview (null: it could not be counted). */
  async function show(shown, out) {
    dataset = shown;
    preview = out;
    $("edits-section").hidden = !out;
    if (!out) return;
    $("edits-title").textContent = `Edits of ${shown.name}`;
    await load();
  }

  function hide() { $("edits-section").hidden = true; dataset = null; }

  return { show, hide };
}
