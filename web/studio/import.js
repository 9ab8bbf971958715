// RLDS Studio, the designer's page: new studies from YAML (typed in a dialog, or a file).

import { showError, toast } from "../shared/api.js";

const $ = (selector) => document.querySelector(selector);
const ctx = { api: null, signedIn: () => false, opened: async () => {} };

const EXAMPLE_YAML = `name: My first study
description: Balance a pole on a moving cart.
instructions: |
  Keep the pole upright as long as you can.
environments:
  - id: cartpole
    name: CartPole
    source:
      kind: gymnasium
      id: CartPole-v1
    instructions: Use the left and right arrow keys to push the cart.
    controls:
      keys: {ArrowLeft: 0, ArrowRight: 1}
      noop: 0
    episodes_per_participant: 3
`;

/** Wire the dialog: ``api``, ``signedIn()``, ``opened(study)`` after a draft was made. */
export function initImport({ api, signedIn, opened }) {
  Object.assign(ctx, { api, signedIn, opened });
  $("#new-study-form").addEventListener("submit", submitNewStudy);
  $("#new-study-cancel").addEventListener("click", () => $("#new-study-dialog").close());
  $("#import-file").addEventListener("change", importFile);
}

/** The "New from YAML" dialog: a study file typed or pasted. */
export function openNewYaml() {
  if (!ctx.signedIn()) return;
  const dialog = $("#new-study-dialog");
  if (dialog.open) return;
  $("#new-study-yaml").value = EXAMPLE_YAML;
  showError($("#new-study-error"), null);
  dialog.showModal();
  $("#new-study-yaml").focus();
}

async function importYaml(text) {
  const study = await ctx.api("POST", "/api/studies/import", { text, contentType: "application/yaml" });
  toast(`Created the draft “${study.name}”.`, "success");
  await ctx.opened(study);
  return study;
}

async function submitNewStudy(event) {
  event.preventDefault();
  const button = $("#new-study-submit");
  button.disabled = true;
  try {
    await importYaml($("#new-study-yaml").value);
    $("#new-study-dialog").close();
  } catch (error) {
    showError($("#new-study-error"), error);
  } finally {
    button.disabled = false;
  }
}

export async function importFile() {
  const input = $("#import-file");
  const file = input.files[0];
  input.value = "";
  if (!file) return;
  try {
    await importYaml(await file.text());
    showError($("#list-error"), null);
  } catch (error) {
    error.message = `Could not import ${file.name}: ${error.message}`;
    showError($("#list-error"), error);
  }
}
