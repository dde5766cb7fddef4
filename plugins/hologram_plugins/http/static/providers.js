// The provider form (first-run screen and the Providers tab) and the fallback chain list.
// A saved key is never sent to the page: the list says api_key_set, the form shows "•••• (saved)" as its
// placeholder, and an empty key field on save means "keep the stored key" (the contract's api_key absent).
"use strict";

(function () {
  const H = window.hologram;
  const { el, api, t } = H;
  const FIELDS = ["name", "kind", "base_url", "model", "thinking", "context_window", "timeout_s", "api_key_env"];
  const DEFAULTS = {
    openai: { base_url: "https://api.openai.com/v1", model: "gpt-4o-mini" },
    deepseek: { base_url: "https://api.deepseek.com", model: "deepseek-chat" },
  };

  /** What providers_save takes for an entry of providers_list (no api_key: the stored one is kept). */
  function toSaved(p) {
    const out = {};
    for (const f of FIELDS) if (p[f] !== undefined && p[f] !== null) out[f] = p[f];
    return out;
  }

  /** A test's outcome as [key, vars] of i18n.js (shown marked: it follows a switch of language). */
  function statusText(r) {
    if (r.ok) return { ok: true, text: ["test.ok", { model: r.model, ms: r.latency_ms }] };
    const error = r.error || "";
    // the vendor's message verbatim; the status only when the message does not already say it
    const status = r.status && !error.includes("HTTP " + r.status) ? " (HTTP " + r.status + ")" : "";
    return { ok: false, text: ["test.failed", { status, error }] };
  }

  /** `text`: [key, vars] of i18n.js, or a message as it came (the server's). */
  function setStatus(node, ok, text) {
    node.className = "status " + (ok ? "ok" : "fail");
    if (Array.isArray(text)) window.i18n.label(node, text[0], text[1]);
    else { delete node.dataset.i18n; delete node.dataset.i18nVars; node.textContent = text; }
  }

  /**
   * Builds the provider form into `host`. `existing`: an entry of providers_list being edited (or null);
   * `onSave(entry)`: returns a promise of the saved chain; `onCancel` (optional) shows a Cancel button.
   */
  function providerForm(host, existing, onSave, onCancel) {
    host.replaceChildren();
    const p = existing || { kind: "deepseek", name: "", ...DEFAULTS.deepseek, thinking: true };
    const input = (id, type, value, attrs) => el("input", { id, "data-testid": id, type, value: value ?? "", ...attrs });
    const kind = el("select", { id: "pf-kind", "data-testid": "pf-kind" },
      el("option", { value: "openai", text: "openai" }), el("option", { value: "deepseek", text: "deepseek" }));
    kind.value = p.kind === "openai" ? "openai" : "deepseek";
    const name = input("pf-name", "text", p.name || "", { placeholder: kind.value });
    const baseUrl = input("pf-base-url", "url", p.base_url);
    const model = input("pf-model", "text", p.model);
    const saved = existing && existing.api_key_set;
    const key = input("pf-api-key", "password", "", {
      autocomplete: "new-password",
      placeholder: saved ? t("provider.api_key_saved") : "",
      "data-i18n-placeholder": saved ? "provider.api_key_saved" : undefined,
    });
    const clearKey = el("input", { id: "pf-clear-key", "data-testid": "pf-clear-key", type: "checkbox" });
    const thinking = el("input", { id: "pf-thinking", "data-testid": "pf-thinking", type: "checkbox" });
    thinking.checked = !!p.thinking;
    const ctx = input("pf-context-window", "number", p.context_window, { min: "1" });
    const timeout = input("pf-timeout", "number", p.timeout_s, { min: "1", step: "any" });
    const status = el("div", { id: "pf-status", "data-testid": "pf-status", class: "status" });
    const thinkingRow = el("label", { class: "check" }, el("span", { i18n: "provider.thinking" }), thinking);
    const syncKind = () => { thinkingRow.hidden = kind.value !== "deepseek"; name.placeholder = kind.value; };
    kind.addEventListener("change", () => {
      const d = DEFAULTS[kind.value];
      if (!existing) { baseUrl.value = d.base_url; model.value = d.model; }
      syncKind();
    });
    syncKind();

    /** The entry as the API takes it; api_key only when typed (an empty field keeps the stored key). */
    function entry() {
      const out = { ...(existing ? toSaved(existing) : {}) };
      out.name = name.value.trim() || kind.value;
      out.kind = kind.value;
      out.base_url = baseUrl.value.trim();
      out.model = model.value.trim();
      if (kind.value === "deepseek") out.thinking = thinking.checked; else delete out.thinking;
      if (ctx.value) out.context_window = Number(ctx.value); else delete out.context_window;
      if (timeout.value) out.timeout_s = Number(timeout.value); else delete out.timeout_s;
      if (key.value) out.api_key = key.value;
      else if (existing && clearKey.checked) out.clear_api_key = true;
      return out;
    }

    const test = el("button", { type: "button", id: "pf-test", "data-testid": "pf-test", i18n: "btn.test" });
    const save = el("button", { type: "submit", id: "pf-save", "data-testid": "pf-save", class: "primary", i18n: "btn.save" });
    test.addEventListener("click", async () => {
      test.disabled = true;
      setStatus(status, true, ["test.running"]);
      status.className = "status";
      try { const r = statusText(await api("POST", "/api/providers/test", { provider: entry() })); setStatus(status, r.ok, r.text); }
      catch (e) { setStatus(status, false, ["test.failed", { status: e.status ? " (HTTP " + e.status + ")" : "", error: e.message }]); }
      finally { test.disabled = false; }
    });
    const form = el("form", { id: "provider-form", "data-testid": "provider-form", class: "form" },
      el("label", {}, el("span", { i18n: "provider.kind" }), kind),
      el("label", {}, el("span", { i18n: "provider.name" }), name),
      el("label", {}, el("span", { i18n: "provider.base_url" }), baseUrl),
      el("label", {}, el("span", { i18n: "provider.model" }), model),
      el("label", {}, el("span", { i18n: "provider.api_key" }), key),
      saved ? el("div", { class: "hint", i18n: "provider.api_key_hint" }) : null,
      saved ? el("label", { class: "check" }, el("span", { i18n: "provider.clear_key" }), clearKey) : null,
      thinkingRow,
      el("label", {}, el("span", { i18n: "provider.context_window" }), ctx),
      el("label", {}, el("span", { i18n: "provider.timeout_s" }), timeout),
      el("div", { class: "actions" }, test, save,
        onCancel ? el("button", { type: "button", id: "pf-cancel", "data-testid": "pf-cancel", i18n: "btn.cancel", onclick: onCancel }) : null),
      status);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      save.disabled = true;
      try { await onSave(entry()); setStatus(status, true, ["save.ok"]); }
      catch (e) { setStatus(status, false, ["save.failed", { error: e.message }]); }
      finally { save.disabled = false; }
    });
    host.append(form);
  }

  // ---- first run ----
  H.register("setup", {
    show() {
      providerForm(document.getElementById("setup-form"), null, async (entry) => {
        await api("PUT", "/api/providers", { providers: [entry] });
        H.setupDone();
      });
    },
    relabel() { /* the form's labels are marked (i18n.js): relabelled in place, what was typed is kept */ },
  });

  // ---- the Providers tab ----
  let chain = [];

  async function saveChain(entries) {
    const r = await api("PUT", "/api/providers", { providers: entries });
    chain = r.providers;
    renderList();
    return r;
  }

  function renderList() {
    const list = document.getElementById("providers-list");
    document.getElementById("providers-empty").hidden = chain.length > 0;
    list.replaceChildren(...chain.map((p, i) => {
      const testStatus = el("div", { class: "status test-status" });
      const move = (delta) => {
        const next = chain.map(toSaved);
        const [item] = next.splice(i, 1);
        next.splice(i + delta, 0, item);
        saveChain(next).catch((e) => H.showNotice(e.message));
      };
      const li = el("li", { dataset: { provider: p.name } },
        el("div", { class: "line" },
          el("div", {},
            el("strong", { text: p.name }), " ",
            el("span", { class: "meta", text: `${p.kind} · ${p.model} · ${p.base_url}` }),
            p.thinking ? el("span", { class: "meta" }, " · ", el("span", { i18n: "provider.thinking_on" })) : null, " ",
            p.api_key_set
              ? el("span", { class: "meta key" }, el("span", { i18n: "provider.api_key" }), ": ", el("span", { i18n: "provider.api_key_saved" }))
              : el("span", { class: "meta key", text: p.api_key_env ? "$" + p.api_key_env : "" })),
          el("div", { class: "buttons" },
            el("button", { class: "up", text: "↑", i18nTitle: "btn.up", disabled: i === 0, onclick: () => move(-1) }),
            el("button", { class: "down", text: "↓", i18nTitle: "btn.down", disabled: i === chain.length - 1, onclick: () => move(1) }),
            el("button", { class: "test", i18n: "btn.test", onclick: async () => {
              testStatus.className = "status test-status"; window.i18n.label(testStatus, "test.running");
              try { const r = statusText(await api("POST", "/api/providers/test", { name: p.name })); setStatus(testStatus, r.ok, r.text); }
              catch (e) { setStatus(testStatus, false, e.message); }
              testStatus.classList.add("test-status");
            } }),
            el("button", { class: "edit", i18n: "btn.edit", onclick: () => editProvider(i) }),
            el("button", { class: "remove danger", i18n: "btn.remove", onclick: () => {
              saveChain(chain.filter((_, j) => j !== i).map(toSaved)).catch((e) => H.showNotice(e.message));
            } }))),
        testStatus);
      return li;
    }));
  }

  function closeForm() { document.getElementById("providers-form").replaceChildren(); }

  function editProvider(index) {
    const host = document.getElementById("providers-form");
    const existing = index === null ? null : chain[index];
    providerForm(host, existing, async (entry) => {
      const next = chain.map(toSaved);
      if (index === null) next.push(entry); else next[index] = entry;
      await saveChain(next);
      closeForm();
    }, closeForm);
    host.scrollIntoView({ block: "nearest" });
  }

  // The approval policy the kernel applies ([approvals.tools.*] of settings.toml; "Always" answers add rules)
  let rules = [];
  function renderRules() {
    const list = document.getElementById("approvals-rules");
    list.replaceChildren(...rules.map((r) => el("li", { "data-testid": "approval-rule", dataset: { tool: r.tool } },
      el("strong", { text: r.tool }), " — ", el("span", { i18n: ["approvals.mode", { mode: { t: "approvals.mode." + r.mode } }] }),
      r.allow.length ? " · " : "", r.allow.length ? el("span", { i18n: ["approvals.allow", { allow: r.allow.join(", ") }] }) : "")));
    document.getElementById("approvals-empty").hidden = rules.length > 0;
  }

  async function load() {
    try { chain = (await api("GET", "/api/providers")).providers; renderList(); }
    catch (e) { H.showNotice(e.message); }
    try { rules = (await api("GET", "/api/approvals")).rules; renderRules(); }
    catch (e) { H.showNotice(e.message); }
  }

  document.getElementById("providers-add").addEventListener("click", () => editProvider(null));
  H.register("providers", { show: load, relabel() { renderList(); renderRules(); } });
})();
