// RLDS Studio, the designer's page: the users section (admins add, deactivate, reactivate,
// and see and clear login limits).

import { el, showError, toast } from "../shared/api.js";

const $ = (selector) => document.querySelector(selector);
const ctx = { api: null, confirmAction: null, currentUser: () => null };

/** Wire the add-a-user form: ``api``, ``confirmAction``, ``currentUser()``. */
export function initUsers({ api, confirmAction, currentUser }) {
  Object.assign(ctx, { api, confirmAction, currentUser });
  $("#user-form").addEventListener("submit", createUser);
}

/** GET ``path``; its error (or none) shown in the box ``errorBox``; null when it failed. */
async function fetchShowingError(path, errorBox) {
  try {
    const body = await ctx.api("GET", path);
    showError($(errorBox), null);
    return body;
  } catch (error) {
    showError($(errorBox), error);
    return null;
  }
}

export async function loadUsers() {
  loadLoginLimits();
  const users = await fetchShowingError("/api/users", "#users-error");
  if (!users) return;
  $("#users-body").replaceChildren(
    ...users.map((user) => {
      const me = ctx.currentUser();
      const self = me && user.id === me.id;
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
    const ok = await ctx.confirmAction(
      "Deactivate this user?",
      `${user.email} will be logged out and cannot log in until reactivated.`,
      "Deactivate",
    );
    if (!ok) return;
  }
  try {
    await ctx.api("PATCH", `/api/users/${user.id}`, { json: { is_active: active } });
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
    const user = await ctx.api("POST", "/api/users", { json: body });
    form.reset();
    showError($("#user-form-error"), null);
    toast(`Created ${user.role} ${user.email}.`, "success");
    await loadUsers();
  } catch (error) {
    showError($("#user-form-error"), error);
  }
}

async function loadLoginLimits() {
  const limits = await fetchShowingError("/api/users/login-limits", "#login-limits-error");
  if (!limits) return;
  const rows = limits.map((limit) => el(
    "tr",
    {},
    el("td", {}, limit.kind === "address" ? "any" : (limit.account ?? "(digest)")),
    el("td", {}, limit.address ?? "(digest)"),
    el("td", {}, String(limit.failures)),
    el("td", {}, limit.retry_after_s ? `${limit.retry_after_s} s` : "none"),
    el("td", { class: "right" }, el("button", {
      type: "button",
      class: "btn btn-small",
      "aria-label": `Clear the login limit of ${limit.account ?? "any account"} from ${limit.address ?? "an address"}`,
      onclick: () => clearLoginLimit(limit.key),
    }, "Clear")),
  ));
  if (!rows.length) {
    rows.push(el("tr", {}, el("td", { colspan: "5", class: "muted small" }, "No failed logins in the window.")));
  }
  $("#login-limits-body").replaceChildren(...rows);
}

async function clearLoginLimit(key) {
  try {
    await ctx.api("DELETE", `/api/users/login-limits?key=${encodeURIComponent(key)}`);
    toast("Login limit cleared.", "success");
  } catch (error) {
    showError($("#login-limits-error"), error);
  }
  await loadLoginLimits();
}
