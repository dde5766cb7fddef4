// The Plugins tab's table: every plugin the project knows of, as `hologram plugin list` shows it — installed
// (its manifest is found now), locked (in the lock), running (its state here) and how `hologram plugin add`
// brought it — with a running plugin's pid, restarts, uptime, what it waits on, its configuration, its log and
// its actions. Two calls make one table: the inventory (`kernel.plugins inventory`) names the rows, the running
// list (`kernel.plugins list`) fills in what the supervisor knows; a plugin only one of them has yet (an add
// being adopted) still gets its row. Adding and removing: plugin-change.js.
"use strict";

(function () {
  const H = window.hologram;
  const { el, api, t } = H;
  const enc = encodeURIComponent;

  let logOf = null;

  async function showLog(name) {
    logOf = name;
    document.getElementById("plugin-log-box").hidden = false;
    window.i18n.label(document.getElementById("plugin-log-title"), "plugins.log_title", { name });
    try {
      const r = await api("GET", `/api/plugins/${enc(name)}/log?lines=200`);
      const pre = document.getElementById("plugin-log");
      pre.textContent = r.lines.length ? r.lines.join("\n") : t("plugins.log_empty");
      pre.scrollTop = pre.scrollHeight;
    } catch (e) { H.showNotice(e.message); }
  }

  // The plugin's configuration as its config model publishes it (the lock's `config-schema`): each key with
  // its description, default and current value (a secret is shown as set / not set, never its value).
  const shown = (v) => v === undefined ? "–" : (typeof v === "string" ? v : JSON.stringify(v));
  const openConfig = new Set();  // kept open across the 2 s refresh
  function configOf(p) {
    const props = (p.config_schema && p.config_schema.properties) || null;
    if (!props) return null;
    const current = p.config || {};
    const rows = Object.keys(props).map((key) => {
      const prop = props[key] || {};
      const now = current[key];
      const value = !now ? "–" : ("set" in now ? t(now.set ? "plugins.config_set" : "plugins.config_unset") : shown(now.value));
      return el("tr", { dataset: { key } },
        el("td", { class: "key" }, el("code", { text: key })),
        el("td", { class: "description", text: prop.description || "" }),
        el("td", { class: "default", text: prop.writeOnly ? "" : shown(prop.default) }),
        el("td", { class: "current", text: value }));
    });
    const box = el("details", { class: "config", "data-testid": "plugin-config" },
      el("summary", { i18n: "plugins.config" }),
      el("table", {},
        el("thead", {}, el("tr", {},
          el("th", { i18n: "plugins.config_key" }), el("th", { i18n: "plugins.config_description" }),
          el("th", { i18n: "plugins.config_default" }), el("th", { i18n: "plugins.config_current" }))),
        el("tbody", {}, ...rows)));
    box.open = openConfig.has(p.name);
    box.addEventListener("toggle", () => { if (box.open) openConfig.add(p.name); else openConfig.delete(p.name); });
    return box;
  }

  const STATES = ["waiting", "starting", "ready", "crashed", "stopping", "stopped", "failed"];
  /** A plugin's state in words (hologram.supervisor.state.State); one this page does not know, as it came. A
   *  plugin the kernel does not run says why: not in the lock yet, or locked with its manifest gone. */
  function stateOf(row) {
    const state = row.state;
    if (row.on_demand) return { i18n: "plugins.state.on_demand" };  // `[start] lazy`: starts at its first call
    if (state) return STATES.includes(state) ? { i18n: "plugins.state." + state } : { text: state };
    if (row.installed === false && row.locked) return { i18n: "plugins.state.not_installed" };
    if (row.locked === false) return { i18n: "plugins.state.not_locked" };
    return { text: "–" };
  }

  /** A state as an i18n var: the page's word for it, or the state as it came. */
  H.pluginState = (state) => (STATES.includes(state) ? { t: "plugins.state." + state } : String(state));

  const yesNo = (value) => (value === undefined ? { text: "–" } : { i18n: value ? "plugins.yes" : "plugins.no" });

  /** How `hologram plugin add` brought it (an editable project, a manifest directory, a package) and from where. */
  function addedLine(added) {
    if (!added) return null;
    return el("div", { class: "added", dataset: { kind: added.kind } },
      el("span", { class: "kind", i18n: "plugins.added." + added.kind }), ": ",
      el("span", { class: "target", text: added.target }));
  }

  /** One row per plugin: the inventory's rows in its order (by name), then any running plugin it lacks. */
  function merge(inventory, running) {
    const live = new Map(running.map((p) => [p.name, p]));
    const rows = inventory.map((row) => ({ ...row, ...(live.get(row.name) || {}), installed: row.installed, locked: row.locked }));
    const known = new Set(inventory.map((r) => r.name));
    for (const p of running) if (!known.has(p.name)) rows.push({ ...p });
    return rows;
  }

  async function loadPlugins() {
    let inventory, running;
    try {
      [inventory, running] = await Promise.all([api("GET", "/api/plugins/inventory"), api("GET", "/api/plugins")]);
    } catch (e) { H.showNotice(e.message); return; }
    const act = (name, action, label) => async () => {
      try { await api("POST", `/api/plugins/${enc(name)}/${action}`, {}); H.showNotice(""); }
      catch (e) { H.showNotice(["plugins.action_failed", { action: { t: label }, error: e.message }]); }
      loadPlugins();
    };
    const rows = merge(inventory.plugins, running.plugins);
    document.getElementById("plugins-body").replaceChildren(...rows.map((p) => el("tr", { dataset: { plugin: p.name, state: p.state || "" } },
      el("td", { class: "name" }, el("strong", { text: p.name }),
        p.version ? el("span", { class: "version muted", text: " " + p.version }) : null,
        p.source ? el("div", { class: "source muted", text: p.source }) : null,
        addedLine(p.added),
        p.last_error ? el("div", { class: "muted", text: p.last_error }) : null, configOf(p)),
      el("td", { class: "installed", i18nLabel: "plugins.col.installed", ...yesNo(p.installed) }),
      el("td", { class: "locked", i18nLabel: "plugins.col.locked", ...yesNo(p.locked) }),
      el("td", { class: "state state-" + (p.state || "none"), dataset: { state: p.state || "" }, i18nLabel: "plugins.col.state", ...stateOf(p) }),
      el("td", { class: "pid", i18nLabel: "plugins.col.pid", text: p.pid === null || p.pid === undefined ? "–" : String(p.pid) }),
      el("td", { class: "restarts", i18nLabel: "plugins.col.restarts", text: p.state ? String(p.restarts ?? 0) : "–" }),
      el("td", { class: "uptime", i18nLabel: "plugins.col.uptime", ...H.duration(p.uptime_s) }),
      el("td", { class: "waiting", i18nLabel: "plugins.col.waiting", text: (p.waiting_on || []).join(", ") || "–" }),
      el("td", { class: "actions" },
        p.state ? el("button", { class: "restart", i18n: "btn.restart", onclick: act(p.name, "restart", "btn.restart") }) : null,
        p.state ? el("button", { class: "stop danger", i18n: "btn.stop_plugin", onclick: act(p.name, "stop", "btn.stop_plugin") }) : null,
        p.state ? el("button", { class: "start", i18n: "btn.start", onclick: act(p.name, "start", "btn.start") }) : null,
        p.state ? el("button", { class: "log", i18n: "btn.log", onclick: () => showLog(p.name) }) : null,
        p.added ? el("button", { class: "remove danger", i18n: "btn.remove_plugin", onclick: () => H.pluginChange.remove(p.name) }) : null))));
    if (logOf) showLog(logOf);
  }
  document.getElementById("plugins-refresh").addEventListener("click", loadPlugins);
  // while the tab is open its table follows the kernel (a restart passes through starting → ready; an added
  // plugin appears as the kernel adopts the new lock)
  window.setInterval(() => { if (!document.getElementById("view-plugins").hidden) loadPlugins(); }, 2000);
  H.register("plugins", { show: loadPlugins, relabel: loadPlugins });
  H.plugins = { load: loadPlugins };
})();
