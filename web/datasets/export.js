// The datasets page's Export section: start an export of the dataset shown (every episode it
// selects now, each in its split), then follow the job (web/shared/jobs.js) to its Download.
import { showError } from "../shared/api.js";
import { createJobView } from "../shared/jobs.js";

const $ = (id) => document.getElementById(id);

/** The section on ``{api, toast, guard}``: ``show(dataset)`` when a dataset is previewed. */
export function createDatasetExport({ api, toast, guard }) {
  const jobView = createJobView({ prefix: "dsjob", api, toast, startButton: $("dx-start") });
  let dataset = null;

  function options() {
    const chosen = $("dx-format").value;
    const oxe = chosen === "tfds-oxe";
    return { format: oxe ? "tfds" : chosen, profile: oxe ? "oxe" : null, archive: $("dx-archive").value };
  }

  async function start(event) {
    event.preventDefault();
    showError($("export-error"), null);
    let job;
    try {
      job = await api("POST", `/api/datasets/${dataset.id}/exports`, { json: { options: options() } });
    } catch (err) {
      const envs = err.body?.detail?.[0]?.environments;
      showError($("export-error"), new Error(`${err.message}${envs ? ` Environments: ${envs.join(", ")}.` : ""}`));
      return;
    }
    jobView.show(job);
    const done = await jobView.follow(job.id);
    if (done.state === "failed") showError($("export-error"), new Error(done.message || "The export failed."));
  }

  /** Show the section for ``shown``, with its latest export (if any) as it stands. */
  async function show(shown) {
    dataset = shown;
    $("export-section").hidden = false;
    $("export-title").textContent = `Export ${shown.name}`;
    showError($("export-error"), null);
    $("dsjob").hidden = true;
    $("dx-start").disabled = false;
    const [latest] = await api("GET", `/api/datasets/${shown.id}/exports`);
    if (latest) {
      jobView.show(latest);
      if (["queued", "running"].includes(latest.state)) await jobView.follow(latest.id);
    }
  }

  function hide() { $("export-section").hidden = true; dataset = null; }

  $("export-form").addEventListener("submit", guard(start));
  jobView.bindCancel(guard);
  return { show, hide };
}
