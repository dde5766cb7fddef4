// The Sessions and Memory tabs: tables over the native API, with their actions (the Plugins tab: plugins.js).
"use strict";

(function () {
  const H = window.hologram;
  const { el, api, t } = H;
  const enc = encodeURIComponent;

  // ---- Sessions ----
  async function loadSessions() {
    let list;
    try { list = (await api("GET", "/api/sessions")).sessions; } catch (e) { H.showNotice(e.message); return; }
    document.getElementById("sessions-empty").hidden = list.length > 0;
    document.getElementById("sessions-body").replaceChildren(...list.map((s) => el("tr", { dataset: { session: s.id } },
      el("td", { class: "title", text: s.title || undefined, i18n: s.title ? undefined : "sessions.untitled" }),
      el("td", { class: "updated", i18nLabel: "sessions.col.updated", ...H.time(s.updated) }),
      el("td", { class: "events", i18nLabel: "sessions.col.events", text: String(s.events ?? "") }),
      el("td", { class: "channel", i18nLabel: "sessions.col.channel", text: s.channel || "" }),
      el("td", { class: "actions" },
        el("button", { class: "open", i18n: "btn.open", onclick: () => { H.show("chat"); H.chat.open(s.id); } }),
        el("button", { class: "rename", i18n: "btn.rename", onclick: async () => {
          const title = window.prompt(t("sessions.rename_prompt"), s.title || "");
          if (title === null || !title.trim()) return;
          try { await api("PATCH", `/api/sessions/${enc(s.id)}`, { title: title.trim() }); } catch (e) { H.showNotice(e.message); }
          loadSessions();
        } }),
        el("button", { class: "delete danger", i18n: "btn.delete", onclick: async () => {
          if (!window.confirm(t("sessions.delete_confirm"))) return;
          try {
            await api("DELETE", `/api/sessions/${enc(s.id)}`);
            if (H.chat.current() === s.id) H.chat.open(null);
          } catch (e) { H.showNotice(e.status === 409 ? ["sessions.busy"] : e.message); }
          loadSessions();
        } })))));
  }
  document.getElementById("sessions-new").addEventListener("click", () => { H.show("chat"); H.chat.open(null); });
  H.register("sessions", { show: loadSessions, relabel: loadSessions });

  // ---- Memory ----
  const LAYERS = [["sessions", "memory.sessions"], ["l1", "memory.l1"], ["l2", "memory.l2"], ["l3_events", "memory.l3_events"],
    ["l3_triples", "memory.l3"], ["l3_entities", "memory.l3_entities"], ["scenes", "memory.scenes"]];
  let graphOf = null; // [entity, hops] the entity box shows (redrawn on a language switch)

  async function loadMemory() {
    let stats;
    try { stats = await api("GET", "/api/memory"); } catch (e) { H.showNotice(e.message); return; }
    document.getElementById("memory-stats").replaceChildren(...LAYERS.map(([key, label]) => el("div", {},
      el("dt", { i18n: label }),
      el("dd", { dataset: { layer: key }, ...(stats[key] === null || stats[key] === undefined ? { i18n: "memory.not_yet" } : { text: String(stats[key]) }) }))));
  }

  /** An entity's name as a link that shows its own neighbourhood. */
  function entityLink(name) {
    return el("a", { href: "#", class: "entity", text: name, dataset: { entity: name }, onclick: (e) => { e.preventDefault(); showGraph(name); } });
  }

  /** Where a triple (or a hit) came from: when, which session (a link to it), the text it was read from. */
  function sourceCell(source) {
    const ms = source.ts_ms;
    return el("td", { class: "source" },
      el("span", { class: "when", ...H.time(ms ? ms / 1000 : 0) }), " · ",
      source.session
        ? el("a", { href: "#", class: "session", text: source.session, onclick: (e) => { e.preventDefault(); H.show("chat"); H.chat.open(source.session); } })
        : el("span", { class: "session", text: "–" }),
      el("div", { class: "source-text", text: source.text || "" }));
  }

  async function showGraph(entity, hops) {
    entity = String(entity || "").trim();
    if (!entity) return;
    hops = hops || Number(document.getElementById("memory-hops").value) || 1;
    document.getElementById("memory-entity").value = entity;
    document.getElementById("memory-hops").value = String(hops);
    graphOf = [entity, hops];
    let r;
    try { r = await api("GET", `/api/memory/graph?entity=${enc(entity)}&hops=${hops}&limit=50`); } catch (e) { H.showNotice(e.message); return; }
    const triples = r.triples || [];
    const title = document.getElementById("memory-graph-title");
    title.hidden = triples.length === 0;
    window.i18n.label(title, "memory.graph_of", { entity: r.entity, count: triples.length });
    const none = document.getElementById("memory-no-triples");
    none.hidden = triples.length > 0;
    window.i18n.label(none, "memory.no_triples", { entity: r.entity });
    document.getElementById("memory-triples").hidden = triples.length === 0;
    document.getElementById("memory-triples-body").replaceChildren(...triples.map((x) => el("tr", { class: "triple", dataset: { event: x.source.event } },
      el("td", { class: "subject", i18nLabel: "memory.col.subject" }, entityLink(x.subject)),
      el("td", { class: "predicate", i18nLabel: "memory.col.predicate", text: x.predicate }),
      el("td", { class: "value", i18nLabel: "memory.col.value" }, entityLink(x.value)),
      sourceCell(x.source))));
  }

  document.getElementById("memory-graph-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    showGraph(document.getElementById("memory-entity").value, Number(document.getElementById("memory-hops").value));
  });

  /** The passage a hit matched in, its matched spans (the hit's `marks`) as <mark>: why it was found. */
  function marked(text, marks) {
    const parts = [];
    let at = 0;
    for (const [start, end] of marks || []) {
      if (start < at || end > text.length) continue;
      parts.push(text.slice(at, start), el("mark", { text: text.slice(start, end) }));
      at = end;
    }
    parts.push(text.slice(at));
    return parts;
  }

  document.getElementById("memory-search").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = document.getElementById("memory-q").value.trim();
    if (!q) return;
    let hits;
    try { hits = (await api("GET", `/api/memory/search?q=${enc(q)}&limit=20`)).hits; } catch (e) { H.showNotice(e.message); return; }
    document.getElementById("memory-no-hits").hidden = hits.length > 0;
    document.getElementById("memory-hits-body").replaceChildren(...hits.map((h) => el("tr", { class: "hit", dataset: { layer: h.layer, kind: h.kind || "" } },
      el("td", { class: "layer", i18n: "memory.layer." + h.layer }),
      el("td", { i18nLabel: "memory.col.session" }, h.session
        ? el("a", { href: "#", text: h.session, onclick: (e) => { e.preventDefault(); H.show("chat"); H.chat.open(h.session); } })
        : "–"),
      el("td", { class: "text" }, h.kind !== "triple" && h.passage ? el("div", { class: "passage" }, ...marked(h.passage, h.marks)) : el("div", { text: h.text }),
        h.kind === "triple" && (h.passage || h.source_text)
          ? el("div", { class: "source muted" }, el("span", { i18n: "memory.source" }), ": ", ...marked(h.passage || h.source_text, h.passage ? h.marks : [])) : null))));
  });

  document.getElementById("memory-distill").addEventListener("click", async () => {
    const button = document.getElementById("memory-distill");
    const status = document.getElementById("memory-distill-status");
    button.disabled = true;
    window.i18n.label(status, "memory.distilling");
    try {
      const r = await api("POST", "/api/memory/distill", {});
      window.i18n.label(status, "memory.distilled", { moved: r.moved, triples: r.triples, failed: r.failed });
      loadMemory();
      if (graphOf) showGraph(...graphOf);
    } catch (e) { delete status.dataset.i18n; status.textContent = ""; H.showNotice(e.message); }
    finally { button.disabled = false; }
  });

  // while the tab is open its counts follow the kernel: L3's are "not yet" until the kernel has opened the graph
  // (after its start-up loads), and turns and cooling change the others
  window.setInterval(() => { if (!document.getElementById("view-memory").hidden) loadMemory(); }, 3000);
  H.register("memory", { show: loadMemory, relabel: () => { loadMemory(); if (graphOf) showGraph(...graphOf); } });
})();
