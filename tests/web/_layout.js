/* The page's visible controls for tests/web/_layout.py: each one's box (its text included:
   a label may spill out of its button), whether its text is wider than it, whether a box that
   hides its overflow cuts it off, and which controls contain it (a key hint in its button). */
() => {
  const selector = "button, input:not([type=hidden]), select, textarea, a.btn, kbd, summary";
  const modal = [...document.querySelectorAll("dialog[open]")].find((d) => d.matches(":modal"));
  const root = modal || document;  // behind a modal dialog nothing can be touched
  const name = (el) => {
    const text = (el.getAttribute("aria-label") || el.textContent || el.value || "").trim();
    return `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""} "${text.slice(0, 40)}"`;
  };
  const out = [];
  for (const el of root.querySelectorAll(selector)) {
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    // what it shows: its text may spill out of its box (a label wider than its button)
    const range = document.createRange();
    range.selectNodeContents(el);
    const t = range.getBoundingClientRect();
    const text = t.width > 0 && t.height > 0;
    const box = text ? { left: Math.min(r.left, t.left), right: Math.max(r.right, t.right),
                         top: Math.min(r.top, t.top), bottom: Math.max(r.bottom, t.bottom) } : r;
    // cut off by a box that hides its overflow (a question taller than the game's stage)
    let cut = false;
    for (let up = el.parentElement; up && !cut; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (![style.overflowX, style.overflowY].some((o) => o === "hidden" || o === "clip")) continue;
      const c = up.getBoundingClientRect();
      cut = r.left < c.left - 1 || r.right > c.right + 1 || r.top < c.top - 1 || r.bottom > c.bottom + 1;
    }
    out.push({ name: name(el), left: box.left + scrollX, top: box.top + scrollY,
               right: box.right + scrollX, bottom: box.bottom + scrollY, index: out.length,
               spills: text && (t.left < r.left - 1 || t.right > r.right + 1), cut });
    el.dataset.layoutIndex = String(out.length - 1);
  }
  // a key hint inside its button is no overlap: mark who contains whom
  for (const item of out) {
    const el = root.querySelector(`[data-layout-index="${item.index}"]`);
    item.inside = out.filter((o) => o !== item
      && root.querySelector(`[data-layout-index="${o.index}"]`).contains(el)).map((o) => o.index);
  }
  for (const el of root.querySelectorAll("[data-layout-index]")) delete el.dataset.layoutIndex;
  return { controls: out, width: document.documentElement.clientWidth,
           scrollWidth: document.documentElement.scrollWidth };
}
