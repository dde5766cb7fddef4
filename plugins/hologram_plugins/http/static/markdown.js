// A small Markdown renderer of our own (no CDN, no dependency). Safety first: the source is HTML-escaped
// BEFORE any markup is produced, and links only keep http(s)/mailto targets, so a model's answer can never
// inject markup or script (tests/web checks `<img onerror>` and `javascript:` links stay inert).
// Supported: fenced code blocks (```lang), inline code, headings, bold, italic, links, lists, quotes, rules.
"use strict";

function escapeHtml(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

function safeUrl(escapedUrl) {
  // the URL is already escaped; undo &amp; only to inspect the scheme
  const raw = escapedUrl.replace(/&amp;/g, "&").trim();
  return /^(https?:|mailto:)/i.test(raw) ? escapedUrl : null;
}

function inline(escaped) {
  // code spans first, kept out of the other rules by placeholders
  const codes = [];
  let s = escaped.replace(/`([^`]+)`/g, (_, c) => { codes.push(c); return "\u0000" + (codes.length - 1) + "\u0000"; });
  // a URL may hold one level of parentheses (wiki links, `javascript:alert(1)` — dropped below either way)
  s = s.replace(/\[([^\]]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)/g, (m, text, url) => {
    const ok = safeUrl(url);
    return ok ? `<a href="${ok}" target="_blank" rel="noopener noreferrer">${text}</a>` : text;
  });
  s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
  s = s.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
  return s;
}

/** HTML for the Markdown text `src`; everything from `src` reaches the output escaped. */
function renderMarkdown(src) {
  const lines = escapeHtml(src || "").split("\n");
  const out = [];
  let para = [];
  let list = null; // "ul" | "ol"
  const flushPara = () => { if (para.length) { out.push("<p>" + inline(para.join("<br>")) + "</p>"); para = []; } };
  const closeList = () => { if (list) { out.push(`</${list}>`); list = null; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flushPara(); closeList();
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) { body.push(lines[i]); i++; }
      const lang = fence[1] ? ` class="lang-${fence[1]}" data-lang="${fence[1]}"` : "";
      out.push(`<pre class="code"><code${lang}>${body.join("\n")}</code></pre>`);
      continue;
    }
    let m;
    if (/^\s*$/.test(line)) { flushPara(); closeList(); continue; }
    if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
      flushPara(); closeList();
      const n = m[1].length;
      out.push(`<h${n}>${inline(m[2])}</h${n}>`);
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flushPara(); closeList(); out.push("<hr>"); continue; }
    if ((m = line.match(/^\s*&gt;\s?(.*)$/))) { flushPara(); closeList(); out.push(`<blockquote>${inline(m[1])}</blockquote>`); continue; }
    if ((m = line.match(/^\s*[-*+]\s+(.*)$/)) || (m = line.match(/^\s*\d+[.)]\s+(.*)$/))) {
      flushPara();
      const kind = /^\s*\d/.test(line) ? "ol" : "ul";
      if (list !== kind) { closeList(); out.push(`<${kind}>`); list = kind; }
      out.push(`<li>${inline(m[1])}</li>`);
      continue;
    }
    closeList();
    para.push(line);
  }
  flushPara(); closeList();
  return out.join("\n");
}

window.markdown = { renderMarkdown, escapeHtml };
