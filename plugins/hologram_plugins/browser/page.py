"""What `browser_read` shows the model: the page's readable text and its interactive elements, numbered.

The numbering is done in the page (a `data-hologram-n` attribute on each element), so `browser_click(n)` and
`browser_type(n, …)` find exactly the element the model was shown, until the next read renumbers them. The
text is the body's `innerText`: what a person sees, laid out (table cells tab-separated, one row a line),
without scripts, styles or hidden elements.
"""

from __future__ import annotations

from typing import Any

ATTRIBUTE = "data-hologram-n"

READ_JS = r"""
(() => {
  const ATTR = "data-hologram-n";
  document.querySelectorAll("[" + ATTR + "]").forEach(e => e.removeAttribute(ATTR));
  const selector = "a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], " +
    "[role=link], [role=checkbox], [role=tab], [role=menuitem], [contenteditable=''], " +
    "[contenteditable=true], [onclick]";
  const items = [];
  for (const el of document.querySelectorAll(selector)) {
    const style = getComputedStyle(el);
    if (!el.getClientRects().length || style.visibility === "hidden" || style.display === "none") continue;
    const n = items.length + 1;
    el.setAttribute(ATTR, String(n));
    const tag = el.tagName.toLowerCase();
    const kind = tag === "input" ? "input[" + (el.type || "text") + "]" : (el.getAttribute("role") || tag);
    let label = el.getAttribute("aria-label") || "";
    if (!label && el.labels && el.labels.length) label = el.labels[0].innerText;
    if (!label) label = (el.innerText || "").trim();
    if (!label) label = el.getAttribute("placeholder") || el.getAttribute("title") || el.getAttribute("alt") || "";
    if (!label && tag === "input" && (el.type === "submit" || el.type === "button")) label = el.value;
    if (!label) label = el.getAttribute("name") || "";
    const item = {n, kind, label: label.replace(/\s+/g, " ").trim().slice(0, 80)};
    if (tag === "a") item.href = el.href;
    if ((tag === "input" || tag === "textarea") && !["submit", "button", "password"].includes(el.type))
      item.value = String(el.value || "").slice(0, 80);
    if (tag === "select") item.value = el.options[el.selectedIndex] ? el.options[el.selectedIndex].text : "";
    if (el.type === "checkbox" || el.type === "radio") item.checked = el.checked;
    if (el.disabled) item.disabled = true;
    items.push(item);
  }
  const body = document.body ? document.body.innerText : "";
  return {title: document.title, url: location.href, text: body, items};
})()
"""

# Scroll the element into view and return its centre (viewport coordinates), or null.
LOCATE_JS = r"""
((n) => {
  const el = document.querySelector("[data-hologram-n='" + n + "']");
  if (!el) return null;
  el.scrollIntoView({block: "center", inline: "center"});
  const r = el.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2, tag: el.tagName.toLowerCase(), type: el.type || ""};
})
"""

# Focus the element and select its content, so typed text replaces it (like a person selecting all first).
FOCUS_JS = r"""
((n) => {
  const el = document.querySelector("[data-hologram-n='" + n + "']");
  if (!el) return null;
  el.scrollIntoView({block: "center"});
  el.focus();
  const tag = el.tagName.toLowerCase();
  if (tag === "select") return {tag, options: Array.from(el.options).map(o => o.text)};
  if (typeof el.select === "function") el.select();
  else if (el.isContentEditable) document.execCommand("selectAll");
  return {tag, focused: document.activeElement === el};
})
"""

# Choose the option of a <select> whose text or value is `text` (case and spaces aside), as a person would.
CHOOSE_JS = r"""
((n, text) => {
  const el = document.querySelector("[data-hologram-n='" + n + "']");
  const norm = s => String(s).replace(/\s+/g, " ").trim().toLowerCase();
  const option = Array.from(el.options).find(o => norm(o.text) === norm(text) || norm(o.value) === norm(text));
  if (!option) return null;
  el.value = option.value;
  el.dispatchEvent(new Event("input", {bubbles: true}));
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return option.text;
})
"""


def render(page: dict[str, Any], max_chars: int) -> str:
    """`Title / URL`, the text (cut at `max_chars`), then `[n] kind "label" → href` lines."""
    text = str(page.get("text") or "").strip()
    notes = ""
    if len(text) > max_chars:
        notes = f"\n[text cut at {max_chars} of {len(text)} characters]"
        text = text[:max_chars]
    lines = [f"{page.get('title') or '(untitled)'}", f"URL: {page.get('url')}", "", text + notes, ""]
    items = page.get("items") or []
    lines.append(f"--- {len(items)} interactive elements (browser_click n / browser_type n) ---")
    budget = max(2000, max_chars // 2)  # a page of 3,000 links must not flood the model's context either
    for shown, item in enumerate(items):
        if budget <= 0:
            lines.append(f"[{len(items) - shown} more elements not listed: [{item['n']}] to [{items[-1]['n']}]]")
            break
        line = f"[{item['n']}] {item['kind']}"
        if item.get("label"):
            line += f' "{item["label"]}"'
        if "value" in item:
            line += f" value={item['value']!r}"
        if "checked" in item:
            line += " (checked)" if item["checked"] else " (unchecked)"
        if item.get("disabled"):
            line += " (disabled)"
        if item.get("href"):
            line += f" → {item['href']}"
        lines.append(line)
        budget -= len(line) + 1
    return "\n".join(lines)
