// The common top of every page: the skip link, the brand and the page's breadcrumb, drawn
// into the page's <header class="topbar">. What the page itself put in the header (the
// signed-in user, a status, an action) stays after them.

import { el } from "./api.js";

/** The first crumb of the studio's pages: back to the list of studies. */
export const STUDIES = { text: "Studies", href: "/" };

/** One crumb: a link ({text, href, id?}), a place the page fills in later ({id, text?}) or text. */
function crumb(item) {
  if (typeof item === "string") return item;
  if (item.href) return el("a", { href: item.href, id: item.id }, item.text);
  return el("span", { id: item.id }, item.text ?? "…");
}

/**
 * Draw the top bar. `crumbs`: the trail to this page, last the page itself (none: no
 * breadcrumb); `home`: whether the brand links to the studies page (a participant's player
 * does not); `skipLink`: a "Skip to content" link to #main before the header.
 */
export function renderTopbar({ crumbs = [], home = true, skipLink = true } = {}) {
  const header = document.querySelector("header.topbar");
  const logo = el("img", { src: "/favicon.svg", alt: "", width: 24, height: 24 });
  const name = el("span", { id: "brand-name" }, "RLDS Studio");
  const brand = home ? el("a", { class: "brand", href: "/" }, logo, name) : el("span", { class: "brand" }, logo, name);
  const parts = [brand];
  if (crumbs.length) {
    const trail = crumbs.flatMap((item, i) => (i ? [" › ", crumb(item)] : [crumb(item)]));
    parts.push(el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, trail));
  }
  header.prepend(...parts);
  if (skipLink) header.before(el("a", { class: "skip-link", href: "#main" }, "Skip to content"));
}
