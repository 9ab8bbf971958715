// RLDS Studio: the designer's pages (login, studies, study detail, users), on the JSON API.

import { ApiError, createApi, el, problems, toast } from "./api.js";
import {
  needsNewVersion, offerNewVersion, renderVersionButton, renderVersions, saveAsVersion, versionNote,
} from "./study-versions.js";
import { mountStudyControls } from "./study-controls.js";

const $ = (selector) => document.querySelector(selector);

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

const STATE_LABELS = { draft: "Draft", active: "Active", paused: "Paused", closed: "Closed" };
const EDITABLE = new Set(["draft", "paused"]);

const state = {
  user: null,
  studies: [],
  selected: null, // the full study (StudyPublic) shown in the detail panel
  selectedYaml: undefined, // its study file (YAML) as last downloaded
};

// --- API --------------------------------------------------------------------------------

/** Call the API; writes carry the CSRF header. Throws ApiError on a non-2xx answer. */
const api = createApi({
  // A 401 anywhere but at login means the session has ended.
  onUnauthorized: (_error, path) => {
    if (path !== "/api/auth/login" && state.user) onSessionLost();
  },
});

// --- small UI helpers ---------------------------------------------------------------------

/** Show an error (message plus one line per field problem) in an alert box; null hides it. */
function showError(box, error) {
  box.replaceChildren();
  if (!error) {
    box.hidden = true;
    return;
  }
  const message = error instanceof ApiError || error instanceof Error ? error.message : String(error);
  box.append(el("p", { class: "alert-message" }, message));
  const lines = error instanceof ApiError ? problems(error.body) : [];
  if (lines.length) box.append(el("ul", { class: "problems" }, lines.map((line) => el("li", {}, line))));
  box.hidden = false;
}

function badge(studyState) {
  return el("span", { class: `badge badge-${studyState}` }, STATE_LABELS[studyState] || studyState);
}

function parseTime(value) {
  // The API sends UTC times without an offset.
  return new Date(/[zZ]|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
}

function relativeTime(value) {
  const date = parseTime(value);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

function timeElement(value) {
  const date = parseTime(value);
  return el("time", { datetime: date.toISOString(), title: date.toLocaleString() }, relativeTime(value));
}

/** Ask for confirmation in a modal dialog; resolves true when confirmed. */
function confirmAction(title, text, okLabel) {
  const dialog = $("#confirm-dialog");
  $("#confirm-title").textContent = title;
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  dialog.returnValue = "";
  dialog.showModal();
  $("#confirm-ok").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

// --- session ------------------------------------------------------------------------------

function showView(name) {
  $("#loading").hidden = true;
  $("#login-view").hidden = name !== "login";
  $("#app-view").hidden = name !== "app";
  $("#whoami").hidden = name !== "app";
}

function onSessionLost() {
  state.user = null;
  state.studies = [];
  closeDetail();
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
  showView("login");
  showError($("#login-error"), new Error("Your session has ended; log in again."));
}

async function enterApp(user) {
  state.user = user;
  $("#whoami-name").textContent = user.name || user.email;
  $("#whoami-name").title = user.email;
  $("#whoami-role").textContent = user.role;
  $("#users-section").hidden = user.role !== "admin";
  showView("app");
  await loadStudies();
  const wanted = Number(new URLSearchParams(location.hash.slice(1)).get("study"));
  if (wanted) await openStudy(wanted, { quiet: true });
  if (user.role === "admin") await loadUsers();
}

async function login(event) {
  event.preventDefault();
  const form = event.target;
  const email = form.email.value.trim();
  const password = form.password.value;
  if (!email || !password) {
    showError($("#login-error"), new Error("Enter your email and password."));
    return;
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const out = await api("POST", "/api/auth/login", { json: { email, password } });
    showError($("#login-error"), null);
    form.reset();
    await enterApp(out.user);
  } catch (error) {
    showError($("#login-error"), error);
    form.password.select();
  } finally {
    button.disabled = false;
  }
}

async function logout() {
  try {
    await api("POST", "/api/auth/logout");
  } catch (error) {
    if (error.status !== 401) {
      toast(error.message, "error");
      return;
    }
  }
  state.user = null;
  state.studies = [];
  closeDetail();
  showError($("#login-error"), null);
  showView("login");
  $("#login-email").focus();
}

// --- study list ---------------------------------------------------------------------------

async function loadStudies() {
  const filter = $("#state-filter").value;
  try {
    state.studies = await api("GET", `/api/studies${filter ? `?state=${filter}` : ""}`);
    showError($("#list-error"), null);
  } catch (error) {
    showError($("#list-error"), error);
    return;
  }
  renderStudies();
}

function renderStudies() {
  const filter = $("#state-filter").value;
  const body = $("#studies-body");
  body.replaceChildren(
    ...state.studies.map((study) => {
      const selected = state.selected && state.selected.id === study.id;
      const envs = study.environments.map((env) => env.name).join(", ");
      return el(
        "tr",
        { class: selected ? "selected" : "", dataset: { studyId: study.id } },
        el("td", {},
          el("button", {
            type: "button",
            class: "link-button",
            "aria-current": selected ? "true" : undefined,
            onclick: () => openStudy(study.id),
          }, study.name),
          versionNote(study, openStudy)),
        el("td", {}, badge(study.state)),
        el("td", { title: study.environments.map((env) => env.source_ref).join(", ") }, envs),
        el("td", {}, timeElement(study.updated_at)),
      );
    }),
  );
  const empty = state.studies.length === 0;
  $("#studies-table").hidden = empty;
  $("#studies-empty").hidden = !empty;
  if (empty) {
    $("#studies-empty-title").textContent = filter
      ? `No ${STATE_LABELS[filter].toLowerCase()} studies`
      : "No studies yet — import a study file or create one";
    $("#studies-empty-hint").hidden = Boolean(filter);
    $("#studies-empty-actions").hidden = Boolean(filter);
  }
}

// --- creating studies ---------------------------------------------------------------------

function openNewStudy() {
  if (!state.user) return;
  const dialog = $("#new-study-dialog");
  if (dialog.open) return;
  $("#new-study-yaml").value = EXAMPLE_YAML;
  showError($("#new-study-error"), null);
  dialog.showModal();
  $("#new-study-yaml").focus();
}

async function importYaml(text) {
  const study = await api("POST", "/api/studies/import", { text, contentType: "application/yaml" });
  toast(`Created the draft “${study.name}”.`, "success");
  if ($("#state-filter").value && $("#state-filter").value !== "draft") $("#state-filter").value = "";
  await loadStudies();
  await openStudy(study.id);
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

async function importFile() {
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

// --- study detail -------------------------------------------------------------------------

async function openStudy(id, { quiet = false } = {}) {
  let study;
  let yaml;
  try {
    [study, yaml] = await Promise.all([
      api("GET", `/api/studies/${id}`),
      api("GET", `/api/studies/${id}/export`),
    ]);
  } catch (error) {
    if (!quiet && error.status !== 401) toast(error.message, "error");
    return;
  }
  showError($("#detail-error"), null);
  renderDetail(study, yaml);
  history.replaceState(null, "", `#study=${id}`);
  renderStudies();
}

function closeDetail() {
  state.selected = null;
  $("#detail").hidden = true;
  if (location.hash) history.replaceState(null, "", location.pathname);
  renderStudies();
}

function lifecycleButtons(study) {
  const move = (label, target, cls = "btn") =>
    el("button", { type: "button", class: cls, onclick: () => changeState(target) }, label);
  const close = el("button", { type: "button", class: "btn btn-danger-outline", onclick: closeStudy }, "Close study");
  switch (study.state) {
    case "draft":
      return [
        move("Activate", "active", "btn btn-primary"),
        el("button", { type: "button", class: "btn btn-danger-outline", onclick: deleteStudy }, "Delete draft"),
      ];
    case "active":
      return [move("Pause", "paused"), close];
    case "paused":
      return [move("Resume", "active", "btn btn-primary"), close];
    default:
      return [el("p", { class: "muted small" }, "This study is closed: its episodes are kept, nobody can play it.")];
  }
}

function renderDetail(study, yaml) {
  if (state.selected?.id !== study.id || yaml !== undefined) clearValidation();
  state.selected = study;
  $("#detail").hidden = false;
  $("#detail-name").textContent = study.name;
  $("#detail-state").replaceWith(Object.assign(badge(study.state), { id: "detail-state" }));
  const envs = study.environments.length;
  $("#detail-meta").replaceChildren(
    `${envs} environment${envs === 1 ? "" : "s"} · created `,
    timeElement(study.created_at),
    " · updated ",
    timeElement(study.updated_at),
  );
  renderVersions(study, openStudy);
  renderVersionButton(study, saveAsNewVersion);
  $("#lifecycle").replaceChildren(...lifecycleButtons(study));

  const linkShown = Boolean(study.permalink_token) && ["active", "paused"].includes(study.state);
  $("#permalink").hidden = !linkShown;
  if (linkShown) $("#permalink-url").value = permalinkUrl(study);

  $("#test-play").href = `/player.html?study=${study.id}`;
  $("#episodes-link").href = `/episodes.html?study=${study.id}`;
  $("#participants-link").href = `/participants.html?study=${study.id}`;
  $("#download-yaml").href = `/api/studies/${study.id}/export`;
  if (yaml !== undefined) {
    state.selectedYaml = yaml;
    $("#spec-yaml").value = yaml;
  }
  $("#spec-yaml").readOnly = !EDITABLE.has(study.state);
  $("#edit-hint").textContent = EDITABLE.has(study.state)
    ? "Edit the study file and save; the format is in docs/study-format.md."
    : study.state === "active"
      ? "An active study cannot be edited: pause it first."
      : "A closed study cannot be edited.";
}

function permalinkUrl(study) {
  return `${location.origin}/player.html?token=${encodeURIComponent(study.permalink_token)}`;
}

/** Apply a study returned by a write: refresh the panel (and its YAML) and the list. */
async function refreshAfterWrite(study) {
  let yaml;
  try {
    yaml = await api("GET", `/api/studies/${study.id}/export`);
  } catch {
    yaml = undefined;
  }
  renderDetail(study, yaml);
  await loadStudies();
}

async function withDetailErrors(work) {
  const buttons = document.querySelectorAll("#detail button");
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await work();
    showError($("#detail-error"), null);
  } catch (error) {
    showError($("#detail-error"), error);
    if (needsNewVersion(error)) offerNewVersion($("#detail-error"));
    if (error.status === 404) await loadStudies();
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

function changeState(target) {
  const study = state.selected;
  return withDetailErrors(async () => {
    const updated = await api("POST", `/api/studies/${study.id}/state`, { json: { state: target } });
    await refreshAfterWrite(updated);
    toast(`“${updated.name}” is now ${STATE_LABELS[updated.state].toLowerCase()}.`, "success");
  });
}

async function closeStudy() {
  const study = state.selected;
  const ok = await confirmAction(
    "Close this study?",
    `Nobody will be able to play “${study.name}” any more. Its episodes are kept. This cannot be undone.`,
    "Close study",
  );
  if (ok) await changeState("closed");
}

async function deleteStudy() {
  const study = state.selected;
  const ok = await confirmAction(
    "Delete this draft?",
    `“${study.name}” will be deleted for good.`,
    "Delete draft",
  );
  if (!ok) return;
  await withDetailErrors(async () => {
    await api("DELETE", `/api/studies/${study.id}`);
    closeDetail();
    await loadStudies();
    toast(`Deleted “${study.name}”.`, "success");
  });
}

function rotateLink() {
  const study = state.selected;
  return withDetailErrors(async () => {
    const updated = await api("POST", `/api/studies/${study.id}/permalink`);
    await refreshAfterWrite(updated);
    toast("A new link was made; the old one no longer works.", "success");
  });
}

async function copyLink() {
  const input = $("#permalink-url");
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    // No clipboard permission (e.g. plain http): fall back to selecting the text.
    input.select();
    if (!document.execCommand("copy")) {
      toast("Copy the selected link with Ctrl+C.", "info");
      return;
    }
  }
  toast("Link copied.", "success");
}

function saveSpec() {
  const study = state.selected;
  const text = $("#spec-yaml").value;
  return withDetailErrors(async () => {
    const updated = await api("PUT", `/api/studies/${study.id}/file`, {
      text,
      contentType: "application/yaml",
    });
    await refreshAfterWrite(updated);
    toast("Saved.", "success");
  });
}

/** Save the edited YAML as a new draft linked to the study, and open it. */
function saveAsNewVersion() {
  const study = state.selected;
  const text = $("#spec-yaml").value;
  return withDetailErrors(async () => {
    const created = await saveAsVersion(api, study, text);
    if ($("#state-filter").value && $("#state-filter").value !== "draft") $("#state-filter").value = "";
    await loadStudies();
    await openStudy(created.id);
    toast(`Saved as “${created.name}”, a new draft version.`, "success");
  });
}

// --- validate -----------------------------------------------------------------------------

/** A space as text: "int64 scalar, 6 values" or "uint8 [210, 160, 3] in [0, 255]". */
function describeSpace(space) {
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
  return `${speed.effective.toFixed(2)}× real speed (${pace})`;
}

function issueList(kind, items) {
  if (!items.length) return null;
  const lines = problems({ detail: items });
  return el("ul", { class: `problems validation-${kind}`, "aria-label": kind }, lines.map((line) => el("li", {}, line)));
}

function renderEnvReport(env) {
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
    el("h4", {}, `${env.name} `, el("span", { class: "muted small" }, `(${env.id})`), " ", status,
      env.cached ? el("span", { class: "muted small" }, " · unchanged since the last check") : null),
    el("div", { class: "validation-body" }, frame, facts),
    issueList("problems", env.problems),
    issueList("warnings", env.warnings),
  );
}

function validateStudy() {
  const study = state.selected;
  const status = $("#validate-status");
  const edited = state.selectedYaml !== undefined && $("#spec-yaml").value !== state.selectedYaml;
  status.textContent = "Building the environments…";
  return withDetailErrors(async () => {
    try {
      const result = await api("POST", `/api/studies/${study.id}/validate`);
      if (state.selected?.id !== study.id) return;
      const box = $("#validation");
      box.replaceChildren(...result.environments.map(renderEnvReport));
      mountStudyControls(box, result.environments, $("#spec-yaml"));
      box.hidden = false;
      status.textContent = (result.ok ? "Every environment builds." : "Some environments do not build.")
        + (edited ? " (The saved study: save your edits to check them.)" : "");
    } catch (error) {
      status.textContent = "";
      throw error;
    }
  });
}

function clearValidation() {
  $("#validation").hidden = true;
  $("#validation").replaceChildren();
  $("#validate-status").textContent = "";
}

// --- users (admins) -----------------------------------------------------------------------

async function loadUsers() {
  let users;
  try {
    users = await api("GET", "/api/users");
    showError($("#users-error"), null);
  } catch (error) {
    showError($("#users-error"), error);
    return;
  }
  $("#users-body").replaceChildren(
    ...users.map((user) => {
      const self = state.user && user.id === state.user.id;
      const toggle = self
        ? el("span", { class: "muted small" }, "you")
        : el("button", {
            type: "button",
            class: user.is_active ? "btn btn-small btn-danger-outline" : "btn btn-small",
            "aria-label": `${user.is_active ? "Deactivate" : "Reactivate"} ${user.email}`,
            onclick: () => setActive(user, !user.is_active),
          }, user.is_active ? "Deactivate" : "Reactivate");
      return el(
        "tr",
        { dataset: { userId: user.id } },
        el("td", {}, user.email),
        el("td", {}, user.name),
        el("td", {}, user.role),
        el("td", {}, el("span", { class: `badge ${user.is_active ? "badge-active" : "badge-closed"}` },
          user.is_active ? "Active" : "Deactivated")),
        el("td", { class: "right" }, toggle),
      );
    }),
  );
}

async function setActive(user, active) {
  if (!active) {
    const ok = await confirmAction(
      "Deactivate this user?",
      `${user.email} will be logged out and cannot log in until reactivated.`,
      "Deactivate",
    );
    if (!ok) return;
  }
  try {
    await api("PATCH", `/api/users/${user.id}`, { json: { is_active: active } });
    toast(`${user.email} is ${active ? "active again" : "deactivated"}.`, "success");
    showError($("#users-error"), null);
  } catch (error) {
    showError($("#users-error"), error);
  }
  await loadUsers();
}

async function createUser(event) {
  event.preventDefault();
  const form = event.target;
  const body = {
    email: form.email.value.trim(),
    name: form.name.value.trim(),
    password: form.password.value,
    role: form.role.value,
  };
  try {
    const user = await api("POST", "/api/users", { json: body });
    form.reset();
    showError($("#user-form-error"), null);
    toast(`Created ${user.role} ${user.email}.`, "success");
    await loadUsers();
  } catch (error) {
    showError($("#user-form-error"), error);
  }
}

// --- keyboard shortcuts -------------------------------------------------------------------

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || !state.user) return;
  const anyDialogOpen = document.querySelector("dialog[open]");
  if (event.key === "Escape") {
    // Open dialogs close themselves on Escape.
    if (!anyDialogOpen && !$("#detail").hidden) {
      closeDetail();
    }
    return;
  }
  const target = event.target;
  const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
  if (typing || anyDialogOpen) return;
  if (event.key === "n") {
    event.preventDefault();
    openNewStudy();
  } else if (event.key === "/") {
    event.preventDefault();
    $("#state-filter").focus();
  }
}

// --- wiring -------------------------------------------------------------------------------

function wire() {
  $("#login-form").addEventListener("submit", login);
  $("#logout-btn").addEventListener("click", logout);
  $("#state-filter").addEventListener("change", loadStudies);
  $("#new-study-btn").addEventListener("click", openNewStudy);
  $("#import-file-btn").addEventListener("click", () => $("#import-file").click());
  $("#import-file").addEventListener("change", importFile);
  $("#studies-empty").addEventListener("click", (event) => {
    const action = event.target.closest("[data-action]")?.dataset.action;
    if (action === "new-study") openNewStudy();
    if (action === "import-file") $("#import-file").click();
  });
  $("#new-study-form").addEventListener("submit", submitNewStudy);
  $("#new-study-cancel").addEventListener("click", () => $("#new-study-dialog").close());
  $("#detail-close").addEventListener("click", closeDetail);
  $("#copy-link").addEventListener("click", copyLink);
  $("#rotate-link").addEventListener("click", rotateLink);
  $("#save-spec").addEventListener("click", saveSpec);
  $("#validate-btn").addEventListener("click", validateStudy);
  $("#reset-spec").addEventListener("click", () => {
    if (state.selectedYaml !== undefined) $("#spec-yaml").value = state.selectedYaml;
    showError($("#detail-error"), null);
  });
  $("#user-form").addEventListener("submit", createUser);
  document.addEventListener("keydown", onKey);
}

async function start() {
  wire();
  let user = null;
  try {
    user = await api("GET", "/api/auth/me");
  } catch (error) {
    if (error.status !== 401) showError($("#login-error"), error);
  }
  if (user) {
    await enterApp(user);
  } else {
    showView("login");
    $("#login-email").focus();
  }
}

start();
