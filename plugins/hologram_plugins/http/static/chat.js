// The Chat view: a session's history, the live stream of its turns (drawn by turn.js), Stop, the composer.
//
// Streaming: one EventSource per open session on /api/sessions/{sid}/events. The browser resends
// Last-Event-ID by itself when the connection drops, so the server replays exactly what was missed. After a
// page reload we re-read the stored session, then open the stream without `after`: the server replays the
// running turn from its start, and its `turn.started` clears whatever the stored (partial) history showed for
// that turn — every delta of the running turn is rendered once, none lost (tests/web checks the text).
// Where the view stays while this happens is follow.js's business: it lands on the running turn or a pending
// approval after a reload or a reopen, and follows the newest event while you are at the bottom.
"use strict";

(function () {
  const H = window.hologram;
  const { api } = H;
  const SESSION_KEY = "hologram.session";

  let session = window.localStorage.getItem(SESSION_KEY) || null;
  let source = null; // the EventSource of `session`
  let lastSeq = 0; // the last event seq rendered from `source` (a reconnect never repeats one)
  const turns = new Map(); // turn id → Turn
  const busy = new Set(); // turns of this session that started and did not end

  const messages = () => document.getElementById("messages");
  const input = () => document.getElementById("chat-input");
  const current = () => session;

  /** Where a new turn's node goes: a stored turn drawn late (see `refresh`) still goes before the turns
   *  streaming now. */
  function place(node) {
    document.getElementById("chat-empty").hidden = true;
    const live = [...turns.values()].find((other) => busy.has(other.id));
    if (live) messages().insertBefore(node, live.node); else messages().append(node);
  }

  function turnOf(id) {
    let turn = turns.get(id);
    if (!turn) { turn = new H.Turn(id, place, current); turns.set(id, turn); }
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
      case "approval.requested": turn.approvalRequested(ev); H.follow.approvalArrived(); break;
      case "approval.resolved": turn.decided(ev.call_id, ev); break;
      case "tool.output": turn.output(ev); break;
      case "tool.result": turn.result(ev.call_id, ev.tool, ev.content, ev.status, ev.is_error, ev.images); break;
      case "turn.error": turn.error(ev); break;
      case "turn.ended": turn.ended(ev); busy.delete(ev.turn); setBusy(); break;
      default: break; // a type this page does not know yet: skipped (new types are additive)
    }
    H.follow.changed();
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
          turn.card(call.id, fn.name).args.textContent = H.pretty(fn.arguments);
        }
      } else if (e.kind === "tool_result") {
        // the decision is stored with the result; a call the rules allowed or refused was never asked
        const approval = d.approval;
        if (approval && approval.by !== "policy") turn.decided(e.call_id, approval);
        turn.result(e.call_id, d.name, d.content, d.status, d.is_error, d.images);
      } else if (e.kind === "output") {
        turn.ended({ stop_reason: d.stop_reason || d.ended_by || "answer" });
      }
    }
    H.follow.changed();
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
    H.chatTitle.show(session, "");
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
      H.showNotice([es.readyState === EventSource.CLOSED ? "error.network" : "chat.reconnecting"]);
    };
  }

  async function refresh() {
    const sid = session;
    try {
      const read = await api("GET", `/api/sessions/${encodeURIComponent(sid)}`);
      if (sid === session) { renderHistory(read.events || []); H.chatTitle.show(sid, read.title || ""); }
    } catch (e) { /* the stream shows what it can; open() reports a missing session */ }
  }

  /** Show session `sid` (null: a new, empty one — created by the first message). */
  async function open(sid) {
    session = sid;
    if (sid) window.localStorage.setItem(SESSION_KEY, sid); else window.localStorage.removeItem(SESSION_KEY);
    clearView();
    H.follow.land();
    if (!sid) return;
    try {
      const read = await api("GET", `/api/sessions/${encodeURIComponent(sid)}`);
      if (sid !== session) return;
      renderHistory(read.events || []);
      H.chatTitle.show(sid, read.title || "");
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
      H.follow.toLatest(); // what you just sent, and its answer as it comes
      if (r.session !== session || !source) {
        session = r.session;
        window.localStorage.setItem(SESSION_KEY, session);
        H.chatTitle.load(session); // the kernel titled it from this text when the turn started
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
      else { H.chatTitle.load(session); H.follow.changed(); }
      input().focus({ preventScroll: true });
    },
  });
  H.chat = { open, current, onEvent };
})();
