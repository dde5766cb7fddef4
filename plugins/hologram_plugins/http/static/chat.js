// The Chat view: a session's history, the live stream of its turns, tool cards, approvals, Stop.
//
// Streaming: one EventSource per open session on /api/sessions/{sid}/events. The browser resends
// Last-Event-ID by itself when the connection drops, so the server replays exactly what was missed. After a
// page reload we re-read the stored session, then open the stream without `after`: the server replays the
// running turn from its start, and its `turn.started` clears whatever the stored (partial) history showed for
// that turn — every delta of the running turn is rendered once, none lost (tests/web checks the text).
"use strict";

(function () {
  const H = window.hologram;
  const { el, api, t } = H;
  const { renderMarkdown } = window.markdown;
  const SESSION_KEY = "hologram.session";

  let session = window.localStorage.getItem(SESSION_KEY) || null;
  let source = null; // the EventSource of `session`
  let lastSeq = 0; // the last event seq rendered from `source` (a reconnect never repeats one)
  const turns = new Map(); // turn id → Turn
  const busy = new Set(); // turns of this session that started and did not end

  const messages = () => document.getElementById("messages");
  const input = () => document.getElementById("chat-input");

  function pretty(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
    }
    return JSON.stringify(value, null, 2);
  }

  /** One turn's block: the user's text, then the answer's segments in the order they streamed. */
  class Turn {
    constructor(id) {
      this.id = id;
      this.node = el("div", { class: "turn", dataset: { turn: id || "" } });
      this.calls = new Map();
      this.reset();
      document.getElementById("chat-empty").hidden = true;
      // a stored turn drawn late (see `refresh`) still goes before the turns streaming now
      const live = [...turns.values()].find((other) => busy.has(other.id));
      if (live) messages().insertBefore(this.node, live.node); else messages().append(this.node);
    }

    reset(text) {
      this.calls.clear();
      this.last = null; // {kind: "text"|"reasoning", node, raw}
      this.user = el("div", { class: "msg user", "data-testid": "user-message" });
      this.answer = el("div", { class: "msg assistant", "data-testid": "assistant-message" },
        el("div", { class: "who", "data-i18n": "chat.assistant", text: t("chat.assistant") }));
      this.note = el("div", { class: "turn-note" });
      this.answer.hidden = true;
      this.node.replaceChildren(this.user, this.answer, this.note);
      if (text !== undefined) this.user.textContent = text;
    }

    setUser(text) { this.user.textContent = text; }

    segment(kind) {
      if (this.last && this.last.kind === kind) return this.last;
      this.answer.hidden = false;
      let node;
      if (kind === "reasoning") {
        // collapsed by default: <details> without `open`
        node = el("details", { class: "reasoning", "data-testid": "reasoning" },
          el("summary", { "data-i18n": "chat.reasoning", text: t("chat.reasoning") }), el("div", { class: "body" }));
      } else {
        node = el("div", { class: "text", "data-testid": "answer-text" });
      }
      this.answer.append(node);
      this.last = { kind, node, raw: "" };
      return this.last;
    }

    addText(text) {
      const seg = this.segment("text");
      seg.raw += text;
      seg.node.dataset.raw = seg.raw;
      seg.node.innerHTML = renderMarkdown(seg.raw); // renderMarkdown escapes the text first
    }

    addReasoning(text) {
      const seg = this.segment("reasoning");
      seg.raw += text;
      seg.node.querySelector(".body").textContent = seg.raw;
    }

    card(callId, tool) {
      let c = this.calls.get(callId);
      if (c) { if (tool && !c.tool) { c.tool = tool; c.title.textContent = t("chat.tool", { tool }); } return c; }
      this.answer.hidden = false;
      c = { tool };
      c.title = el("span", { text: t("chat.tool", { tool: tool || "?" }) });
      c.state = el("span", { class: "state", text: t("chat.running") });
      c.args = el("pre", { class: "args" });
      c.output = el("pre", { class: "output" });
      c.result = el("pre", { class: "result" });
      c.outputPart = el("div", { class: "part", hidden: true }, el("div", { class: "label", "data-i18n": "chat.output", text: t("chat.output") }), c.output);
      c.resultPart = el("div", { class: "part", hidden: true }, el("div", { class: "label", "data-i18n": "chat.result", text: t("chat.result") }), c.result);
      c.approval = el("div", { class: "approval", hidden: true });
      c.node = el("div", { class: "tool", "data-testid": "tool-card", dataset: { callId } },
        el("div", { class: "head" }, c.title, c.state),
        el("div", { class: "part" }, el("div", { class: "label", "data-i18n": "chat.arguments", text: t("chat.arguments") }), c.args),
        c.approval, c.outputPart, c.resultPart);
      this.answer.append(c.node);
      this.last = null;
      this.calls.set(callId, c);
      return c;
    }

    toolCall(ev) { this.card(ev.call_id, ev.tool).args.textContent = pretty(ev.arguments); }

    output(ev) {
      const c = this.card(ev.call_id);
      c.outputPart.hidden = false;
      c.output.textContent += ev.text;
    }

    result(callId, tool, content, status, isError) {
      const c = this.card(callId, tool);
      c.resultPart.hidden = false;
      c.result.textContent = content === null || content === undefined ? "" : String(content);
      const st = status || (isError ? "error" : "ok");
      c.state.textContent = st;
      c.state.className = "state " + st;
      c.approval.hidden = c.approval.dataset.decided ? false : true;
    }

    approvalRequested(ev) {
      const c = this.card(ev.call_id, ev.tool);
      if (ev.arguments !== undefined && !c.args.textContent) c.args.textContent = pretty(ev.arguments);
      // a decision (docs/protocol.md §9): once, the rest of this session, always (the policy), or no
      const decide = (decision) => async () => {
        for (const b of c.approval.querySelectorAll("button")) b.disabled = true;
        try { await api("POST", `/api/sessions/${encodeURIComponent(session)}/approvals/${encodeURIComponent(ev.approval)}`, { decision }); }
        catch (e) { H.showNotice(e.message); for (const b of c.approval.querySelectorAll("button")) b.disabled = false; }
      };
      const button = (cls, testid, key, decision) =>
        el("button", { class: cls, "data-testid": testid + ev.call_id, "data-i18n": key, text: t(key), onclick: decide(decision) });
      c.approval.replaceChildren(
        el("span", { text: (ev.summary ? ev.summary + " — " : "") + t("chat.approval") }),
        button("approve primary", "approve-", "btn.approve", "approve_once"),
        button("approve-session", "approve-session-", "btn.approve_session", "approve_for_session"),
        button("approve-always", "approve-always-", "btn.approve_always", "always"),
        button("deny danger", "deny-", "btn.deny", "deny"));
      c.approval.hidden = false;
    }

    approvalResolved(ev) {
      const c = this.card(ev.call_id);
      const reason = ev.reason ? " (" + ev.reason + ")" : "";
      const approvedKey = { approve_for_session: "chat.approved_session", always: "chat.approved_always" }[ev.decision] || "chat.approved";
      c.approval.replaceChildren(el("span", { class: "decision", dataset: { decision: ev.decision || "" }, text: ev.approved ? t(approvedKey, { by: ev.by }) : t("chat.denied", { by: ev.by, reason }) }));
      c.approval.dataset.decided = "1";
      c.approval.hidden = false;
    }

    ended(ev) {
      if (ev.stop_reason === "cancelled") this.note.textContent = t("chat.cancelled");
      else if (ev.stop_reason && ev.stop_reason !== "answer") this.note.textContent = t("chat.stop_reason", { reason: ev.stop_reason });
      for (const c of this.calls.values()) if (c.state.textContent === t("chat.running")) c.state.textContent = "–";
      this.node.dataset.ended = ev.stop_reason || "answer";
    }

    error(ev) {
      this.note.className = "turn-note error";
      this.note.textContent = t("chat.error", { message: ev.message });
    }
  }

  function turnOf(id) {
    let turn = turns.get(id);
    if (!turn) { turn = new Turn(id); turns.set(id, turn); }
    return turn;
  }

  function setBusy() {
    document.getElementById("chat-stop").hidden = busy.size === 0;
    document.getElementById("view-chat").dataset.busy = busy.size ? "1" : "";
  }

  /** One event of the turn API's wire form (docs/protocol.md section 9). */
  function onEvent(ev) {
    if (typeof ev.seq === "number") {
      if (ev.seq <= lastSeq) return; // already rendered (never expected: the server resumes after Last-Event-ID)
      lastSeq = ev.seq;
    }
    const turn = turnOf(ev.turn);
    switch (ev.type) {
      case "turn.started": turn.reset(ev.text); busy.add(ev.turn); setBusy(); break;
      case "content.delta": turn.addText(ev.text); break;
      case "reasoning.delta": turn.addReasoning(ev.text); break;
      case "tool.call": turn.toolCall(ev); break;
      case "approval.requested": turn.approvalRequested(ev); break;
      case "approval.resolved": turn.approvalResolved(ev); break;
      case "tool.output": turn.output(ev); break;
      case "tool.result": turn.result(ev.call_id, ev.tool, ev.content, ev.status, ev.is_error); break;
      case "turn.error": turn.error(ev); break;
      case "turn.ended": turn.ended(ev); busy.delete(ev.turn); setBusy(); break;
      default: break; // a type this page does not know yet: skipped (new types are additive)
    }
    scrollDown();
  }

  function scrollDown() {
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
    if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
  }

  /** The stored history: turns in order, rebuilt from the session's events. A turn streaming now is the
   *  stream's to draw, and one already drawn to its end stays as it is: so this can run again at any time. */
  function renderHistory(events) {
    let current = null;
    let skip = null;
    for (const e of events) {
      const id = e.turn || (current && current.id) || "stored-" + e.seq;
      if (id === skip) continue;
      const known = turns.get(id);
      if (busy.has(id) || (known && known.node.dataset.ended && current !== known)) { skip = id; continue; }
      const turn = turnOf(id);
      if (current !== turn) { turn.reset(); current = turn; }
      const d = e.data || {};
      if (e.kind === "input") turn.setUser(d.text || "");
      else if (e.kind === "response") {
        const reasoning = d.reasoning ?? d.reasoning_content;
        if (reasoning) turn.addReasoning(reasoning);
        if (d.content) turn.addText(d.content);
        for (const call of d.tool_calls || []) {
          const fn = call.function || call;
          turn.card(call.id, fn.name).args.textContent = pretty(fn.arguments);
        }
      } else if (e.kind === "tool_result") {
        turn.result(e.call_id, d.name, d.content, d.status, d.is_error);
      } else if (e.kind === "output") {
        turn.ended({ stop_reason: d.stop_reason || d.ended_by || "answer" });
      }
    }
  }

  function clearView() {
    if (source) { source.close(); source = null; }
    lastSeq = 0;
    turns.clear();
    busy.clear();
    setBusy();
    const empty = document.getElementById("chat-empty");
    messages().replaceChildren(empty);
    empty.hidden = false;
    document.getElementById("chat-session").textContent = session ? t("chat.session", { id: session }) : "";
  }

  function stream() {
    if (source) source.close();
    lastSeq = 0;
    const es = new EventSource(`/api/sessions/${encodeURIComponent(session)}/events`);
    source = es;
    es.onmessage = (m) => { if (source === es) { try { onEvent(JSON.parse(m.data)); } catch (e) { H.showNotice(e.message); } } };
    let first = true;
    es.onopen = () => {
      if (source !== es) return;
      H.showNotice("");
      // A turn that ended before the stream connected is not replayed (only a running one is): read the
      // stored session once more to draw it. Reconnects need no read — Last-Event-ID resumes them.
      if (first) { first = false; refresh(); }
    };
    es.onerror = () => {
      if (source !== es) return;
      H.showNotice(es.readyState === EventSource.CLOSED ? t("error.network") : t("chat.reconnecting"));
    };
  }

  async function refresh() {
    const sid = session;
    try {
      const events = (await api("GET", `/api/sessions/${encodeURIComponent(sid)}`)).events || [];
      if (sid === session) renderHistory(events);
    } catch (e) { /* the stream shows what it can; open() reports a missing session */ }
  }

  /** Show session `sid` (null: a new, empty one — created by the first message). */
  async function open(sid) {
    session = sid;
    if (sid) window.localStorage.setItem(SESSION_KEY, sid); else window.localStorage.removeItem(SESSION_KEY);
    clearView();
    if (!sid) return;
    try {
      renderHistory((await api("GET", `/api/sessions/${encodeURIComponent(sid)}`)).events || []);
    } catch (e) {
      if (e.status === 404) { open(null); return; }
      H.showNotice(e.message);
      return;
    }
    stream();
  }

  async function send() {
    const text = input().value;
    if (!text.trim()) return;
    const body = session ? { text, session } : { text };
    try {
      const r = await api("POST", "/api/turns", body);
      input().value = "";
      if (r.session !== session || !source) {
        session = r.session;
        window.localStorage.setItem(SESSION_KEY, session);
        document.getElementById("chat-session").textContent = t("chat.session", { id: session });
        stream();
      }
    } catch (e) { H.showNotice(e.message); }
  }

  // Enter sends, Shift+Enter is a new line; never while an input method composes (Chinese, Japanese, …):
  // its Enter confirms the candidate. `isComposing` covers modern browsers, keyCode 229 older ones, and the
  // composition events the moment right after compositionend in Safari.
  let composing = false;
  const box = input();
  box.addEventListener("compositionstart", () => { composing = true; });
  box.addEventListener("compositionend", () => { setTimeout(() => { composing = false; }, 0); });
  box.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || ev.shiftKey) return;
    if (ev.isComposing || composing || ev.keyCode === 229) return;
    ev.preventDefault();
    send();
  });
  document.getElementById("composer").addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  document.getElementById("chat-stop").addEventListener("click", async () => {
    if (!session) return;
    try { await api("POST", `/api/sessions/${encodeURIComponent(session)}/cancel`, {}); } catch (e) { H.showNotice(e.message); }
  });
  document.getElementById("chat-new").addEventListener("click", () => open(null));

  let shown = false;
  H.register("chat", {
    show() {
      if (!shown) { shown = true; open(session); }
      this.relabel();
      input().focus();
    },
    relabel() {
      document.getElementById("chat-session").textContent = session ? t("chat.session", { id: session }) : "";
    },
  });
  H.chat = { open, current: () => session, onEvent };
})();
