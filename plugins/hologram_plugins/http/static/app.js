// Hologram's page: the core (API calls, tabs, boot). Views live in providers.js, chat.js, panels.js.
// Plain JS, no framework, no build step; every string shown goes through i18n.js (window.i18n.t).
//
// Stable ids for tests (each also has data-testid with the same name):
//   header:     tab-chat, tab-sessions, tab-providers, tab-plugins, tab-memory, lang-en, lang-zh, notice
//   views:      view-setup, view-chat, view-sessions, view-providers, view-plugins, view-memory
//   provider form (setup and Providers tab): provider-form, pf-name, pf-kind, pf-base-url, pf-model,
//               pf-api-key, pf-clear-key, pf-thinking, pf-context-window, pf-timeout, pf-test, pf-save,
//               pf-cancel, pf-status (the Test/Save outcome; the vendor's error verbatim)
//   chat:       messages, chat-input, chat-send, chat-stop, chat-new, chat-session, chat-jump (Jump to latest);
//               chat-title, chat-rename, chat-title-input (the title, renamed in place);
//               each turn `.turn[data-turn]` (`data-ended` once ended); user text `.msg.user`; answer
//               `.msg.assistant .text`; reasoning `details.reasoning` (collapsed by default) `.body`;
//               tool card `.tool[data-call-id]` with `.title`, `.args`, `.output`, `.result`, `.state[data-state]`
//               (running, waiting, ok, error, denied, …), `.approval` (`.pending` while asked) with
//               `.decision[data-decision]` and a refusal's `.reason`,
//               approval buttons `button.approve` / `.approve-session` / `.approve-always` / `button.deny`
//               (data-testid approve-CALLID / approve-session-CALLID / approve-always-CALLID / deny-CALLID)
//   sessions:   sessions-table, rows `tr[data-session]` with buttons `.open`, `.rename`, `.delete`; sessions-new
//   providers:  providers-list, items `li[data-provider]` with `.up`, `.down`, `.edit`, `.remove`, `.test`,
//               `.key` (masked), `.test-status`; providers-add
//   plugins:    plugins-table, rows `tr[data-plugin]` with `.name` (`.version`, `.source`, `.added` with `.kind`
//               and `.target`), `.installed`, `.locked`, `.state`, `.pid`, `.restarts`, `.uptime`, `.waiting`,
//               buttons `.restart`, `.stop`, `.start`, `.log`, `.remove` (a plugin `add` brought); plugin-log;
//               plugins-refresh; adding: plugin-add-form, plugin-add-target, plugin-add (the button); the
//               preview plugin-change with plugin-change-title, plugin-summaries (`section.summary[data-plugin]`
//               with `.source`, `.runs`, `.provides`, `.requires`, `.tools`, `dd.approval`, `ul.may li[data-kind]`),
//               plugin-changes (`.starts`, `.restarts`, `.stops`, `.others`), plugin-diff, plugin-warnings,
//               plugin-confirm, plugin-cancel; the outcome plugin-status (`.ok`, `.fail`, `.warning` lines) and
//               plugin-error (a refusal, as the kernel wrote it)
//   memory:     memory-stats (`[data-layer]` dd), memory-q, memory-search, memory-hits (rows `tr.hit[data-layer]`
//               with `.layer`, `.text`, a triple's `.source`); entity box memory-entity, memory-hops, memory-graph
//               (the button), memory-graph-title, memory-triples (rows `tr.triple` with `.subject`, `.predicate`,
//               `.value` — subject and value are `a.entity` links showing that entity's neighbourhood — and
//               `.source` with `.when`, `.session`, `.source-text`), memory-no-triples; memory-distill,
//               memory-distill-status
// The access token never reaches this code: `/?token=` sets an HttpOnly cookie and redirects to `/`.
"use strict";

(function () {
  const { t } = window.i18n;

  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }

  /** A JSON call to the native API; errors become ApiError with the server's message. */
  async function api(method, path, body) {
    const init = { method, headers: {}, credentials: "same-origin" };
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    let res;
    try { res = await fetch(path, init); } catch (e) { throw new ApiError(0, "network", t("error.network")); }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = (data && data.error) || {};
      if (res.status === 401) showNotice(["error.unauthorized"]);
      throw new ApiError(res.status, err.code || String(res.status), err.message || res.statusText);
    }
    return data;
  }

  /** The notice under the header: `text` as it came (a server's message), or [key, vars] of i18n.js (marked:
   *  it follows a switch of language while shown); "" hides it. */
  function showNotice(text) {
    const node = document.getElementById("notice");
    delete node.dataset.i18n;
    delete node.dataset.i18nVars;
    if (!text) { node.hidden = true; node.textContent = ""; return; }
    if (Array.isArray(text)) window.i18n.label(node, text[0], text[1]); else node.textContent = text;
    node.hidden = false;
  }

  /** An element: el("button", {class: "x", text: "..."}, child...) — text is always set as text, never HTML.
   *  `i18n: key` or `i18n: [key, vars]` shows a string of i18n.js and marks it, so a switch of language
   *  relabels it wherever it is (an old tool card too); `i18nTitle: key` does the same for the tooltip, and
   *  `i18nLabel: key` for the label a table cell shows when a narrow screen stacks its row (app.css), `i18nAlt:
   *  [key, vars]` for an image's alt text. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "i18n") { if (Array.isArray(v)) window.i18n.label(node, v[0], v[1]); else window.i18n.label(node, v); }
      else if (k === "i18nTitle") { node.dataset.i18nTitle = v; node.title = t(v); }
      else if (k === "i18nLabel") { node.dataset.i18nLabel = v; node.dataset.label = t(v); } // a stacked cell's label
      else if (k === "i18nAlt") { // an image's alt text: [key, vars]
        node.dataset.i18nAlt = v[0];
        node.dataset.i18nVars = JSON.stringify(v[1] || {});
        node.alt = t(v[0], v[1]);
      }
      else if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  const views = {}; // name → {show(): void}
  let current = null;

  function register(name, view) { views[name] = view; }

  function show(name) {
    current = name;
    for (const section of document.querySelectorAll("main > .view")) section.hidden = section.id !== "view-" + name;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === name);
    if (views[name] && views[name].show) views[name].show();
  }

  function setTabsEnabled(enabled) {
    for (const b of document.querySelectorAll("#tabs button")) b.disabled = !enabled;
  }

  function markLang() {
    for (const b of document.querySelectorAll(".lang button")) b.classList.toggle("active", b.dataset.lang === window.i18n.getLang());
  }

  /** A duration as `el` attributes: marked with its i18n key, so a switch of language relabels it. */
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return { text: "–" };
    const s = Math.floor(seconds);
    if (s < 60) return { i18n: ["time.seconds", { s }] };
    if (s < 3600) return { i18n: ["time.minutes", { m: Math.floor(s / 60), s: s % 60 }] };
    return { i18n: ["time.hours", { h: Math.floor(s / 3600), m: Math.floor((s % 3600) / 60) }] };
  }

  function formatTime(ts) {
    if (!ts) return "–";
    const d = new Date(typeof ts === "number" ? ts * 1000 : ts);
    return isNaN(d.getTime()) ? String(ts) : d.toLocaleString(window.i18n.getLang());
  }

  /** A time (seconds since the epoch) as `el` attributes, in the language's format, redone on a switch. */
  function time(ts) {
    return ts ? { dataset: { time: String(ts) }, text: formatTime(ts) } : { text: "–" };
  }

  function retime() {
    for (const node of document.querySelectorAll("[data-time]")) node.textContent = formatTime(Number(node.dataset.time));
  }

  async function boot() {
    window.i18n.applyI18n(document);
    markLang();
    document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));
    document.querySelectorAll(".lang button").forEach((b) => b.addEventListener("click", () => window.i18n.setLang(b.dataset.lang)));
    document.addEventListener("hologram:lang", () => { markLang(); retime(); if (current && views[current] && views[current].relabel) views[current].relabel(); });
    let info;
    try { info = await api("GET", "/api/info"); } catch (e) { showNotice(e.message); return; }
    if (!info.providers) { setTabsEnabled(false); show("setup"); return; }
    setTabsEnabled(true);
    if (current) return;  // a tab chosen while /api/info was on its way stays chosen (it was bounced to chat)
    const hash = (location.hash || "").replace(/^#/, "");
    show(views[hash] ? hash : "chat");
  }

  /** Leave the first-run screen once a provider is saved. */
  function setupDone() { setTabsEnabled(true); show("chat"); }

  // after every script of the page has registered its view (the page's CSP allows no inline script)
  document.addEventListener("DOMContentLoaded", boot);

  window.hologram = { api, ApiError, el, t, show, register, boot, setupDone, showNotice, duration, time, formatTime };
})();
