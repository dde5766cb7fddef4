// Adding and removing plugins from the Plugins tab, with the confirmation `hologram plugin add` asks at a
// terminal. Two calls, as `kernel.plugins add/remove` works for a client without a terminal: the first (no
// `confirm`) returns the preview and changes nothing — what pip installed to read the manifest is uninstalled
// again — and the page shows it: what each plugin provides, requires and may do (tools that need approval
// among it), which plugins start, restart or stop, the lock's diff. Only the explicit confirm button sends the
// second call, carrying the preview's `confirm` value: the kernel does it, or refuses when the result would
// differ from what was shown. A refusal (the resolver's error, pip's) is shown as the kernel wrote it, and
// nothing changed. A path is a directory on the kernel's machine: the page says so where it asks for one.
"use strict";

(function () {
  const H = window.hologram;
  const { el, api } = H;
  const $ = (id) => document.getElementById(id);
  const KINDS = ["process", "inproc", "approval", "grant", "env", "stages"]; // Ask.kind (hologram/install/summary.py)

  let pending = null; // {action, params, preview} while a preview is shown
  let busy = false;

  /** Buttons off while a call runs (an add can take a while: pip runs on the kernel's machine). */
  function setBusy(on) {
    busy = on;
    for (const id of ["plugin-add", "plugin-confirm", "plugin-cancel"]) $(id).disabled = on;
  }

  /** The outcome area: lines of [key, vars, class], the kernel's warnings (what could not be undone, as it
   *  wrote them), and the kernel's own text of a refusal (or none). */
  function outcome(lines, refusal, warnings) {
    const status = $("plugin-status");
    status.replaceChildren(...lines.map(([key, vars, cls]) => el("div", { class: cls || "", i18n: [key, vars] })),
      ...(warnings || []).map((w) => el("div", { class: "warning", text: w })));
    status.hidden = status.childElementCount === 0;
    const error = $("plugin-error");
    error.textContent = refusal || "";
    error.hidden = !refusal;
  }

  /** One thing the plugin may do, in the page's language; a kind (or kernel facility) this page does not
   *  know is shown as the kernel worded it. */
  function mayItem(m) {
    const names = (m.names || []).join(", ");
    if (m.kind === "grant") {
      const key = "plugins.grant." + m.facility;
      return key in window.i18n.STRINGS.en
        ? el("li", { dataset: { kind: m.kind }, i18n: ["plugins.may.grant", { grant: { t: key }, facility: m.facility }] })
        : el("li", { dataset: { kind: m.kind }, text: m.text });
    }
    return KINDS.includes(m.kind)
      ? el("li", { class: m.kind === "approval" ? "approval" : "", dataset: { kind: m.kind }, i18n: ["plugins.may." + m.kind, { names }] })
      : el("li", { dataset: { kind: m.kind }, text: m.text });
  }

  function fact(label, value) {
    return [el("dt", { i18n: label }), el("dd", value)];
  }

  const listed = (items, none) => (items.length ? { text: items.join(", ") } : { i18n: none });

  /** What one plugin's manifest says, as the CLI prints it before asking. */
  function summary(s) {
    return el("section", { class: "summary", dataset: { plugin: s.name } },
      el("h3", {}, el("strong", { class: "name", text: s.name }), el("span", { class: "data", text: " " + s.version + (s.description ? " — " + s.description : "") })),
      el("dl", { class: "facts" },
        ...fact("plugins.from", { class: "source", text: s.source }),
        ...fact("plugins.runs", { class: "runs", i18n: [s.inproc ? "plugins.runs.inproc" : "plugins.runs.process", { command: s.command }] }),
        ...fact("plugins.provides", { class: "provides", ...listed(s.provides, "plugins.nothing") }),
        ...fact("plugins.requires", { class: "requires", ...listed(s.requires, "plugins.nothing") }),
        ...fact("plugins.tools", { class: "tools", ...listed(s.tools, "plugins.none") }),
        ...(s.approval_tools.length ? fact("plugins.needs_approval", { class: "approval", text: s.approval_tools.join(", ") }) : [])),
      el("p", { class: "may-title", i18n: "plugins.may_title" }),
      el("ul", { class: "may" }, ...(s.may || s.asks.map((text) => ({ kind: "", text }))).map(mayItem)));
  }

  /** The lock's unified diff, its added and removed lines marked. */
  function diffLines(lines) {
    return lines.map((line) => el("span", {
      class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "",
      text: line + "\n",
    }));
  }

  function draw(action, preview) {
    const names = preview.plugins.join(", ");
    window.i18n.label($("plugin-change-title"), action === "add" ? "plugins.confirm_add" : "plugins.confirm_remove", { names });
    $("plugin-summaries").replaceChildren(...preview.summaries.map(summary));
    const changes = preview.changes;
    $("plugin-changes").replaceChildren(
      ...(changes.added.length ? [el("li", { class: "starts", i18n: ["plugins.change.starts", { names: changes.added.join(", ") }] })] : []),
      ...(changes.restarted.length ? [el("li", { class: "restarts", i18n: ["plugins.change.restarts", { names: changes.restarted.join(", ") }] })] : []),
      ...(changes.removed.length ? [el("li", { class: "stops", i18n: ["plugins.change.stops", { names: changes.removed.join(", ") }] })] : []),
      el("li", { class: "others", i18n: "plugins.change.others" }));
    $("plugin-diff").replaceChildren(...diffLines(preview.diff));
    $("plugin-warnings").replaceChildren(...preview.warnings.map((w) => el("li", { text: w })));
    const confirm = $("plugin-confirm");
    window.i18n.label(confirm, action === "add" ? "btn.confirm_add" : "btn.confirm_remove", { names });
    confirm.className = action === "add" ? "primary" : "danger";
    $("plugin-change").hidden = false;
    $("plugin-change").scrollIntoView({ block: "nearest" });
  }

  function close() {
    pending = null;
    $("plugin-change").hidden = true;
  }

  /** The first call: the preview, nothing changed. */
  async function preview(action, params, what) {
    if (busy) return;
    close();
    setBusy(true);
    outcome([[action === "add" ? "plugins.previewing_add" : "plugins.previewing_remove", what]]);
    try {
      const answer = await api("POST", `/api/plugins/${action}`, params);
      outcome([]);
      pending = { action, params, preview: answer };
      draw(action, answer);
    } catch (e) {
      outcome([[action === "add" ? "plugins.not_added" : "plugins.not_removed", what, "fail"]], e.message);
    } finally { setBusy(false); }
  }

  /** The second call, on the confirm button only: the preview's `confirm` value, so the kernel does exactly that. */
  async function confirm() {
    if (busy || !pending) return;
    const { action, params, preview: shown } = pending;
    const names = shown.plugins.join(", ");
    setBusy(true);
    outcome([[action === "add" ? "plugins.adding" : "plugins.removing", { names }]]);
    try {
      const done = await api("POST", `/api/plugins/${action}`, { ...params, confirm: shown.confirm });
      close();
      const lines = action === "add"
        ? ((done.reload && done.reload.plugins) || []).map((p) => p.state === "ready"
          ? ["plugins.added_ready", { name: p.name, state: { t: "plugins.state.ready" }, pid: p.pid }, "ok"]
          : ["plugins.added_not_ready", { name: p.name, state: H.pluginState(p.state), reason: p.reason || "–" }, "fail"])
        : [["plugins.removed", { names }, "ok"]];
      outcome(lines, "", action === "remove" ? done.warnings : []);  // an add's warnings were in its preview
      if (action === "add") $("plugin-add-target").value = "";
    } catch (e) {
      close();
      outcome([[action === "add" ? "plugins.not_added" : "plugins.not_removed", { target: params.target || params.name }, "fail"]], e.message);
    } finally {
      setBusy(false);
      H.plugins.load();
    }
  }

  $("plugin-add-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const target = $("plugin-add-target").value.trim();
    if (target) preview("add", { target }, { target });
  });
  $("plugin-confirm").addEventListener("click", confirm);
  $("plugin-cancel").addEventListener("click", () => { close(); outcome([]); });

  H.pluginChange = { remove: (name) => preview("remove", { name }, { target: name }) };
})();
