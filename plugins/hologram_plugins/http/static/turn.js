// One turn of the chat as the page draws it: the user's text, then the answer's segments in the order they
// streamed (reasoning, text, tool cards). chat.js feeds it the live events and the stored history alike, so a
// reopened session shows what the live page showed: each card's arguments, output, result, state and the
// approval decision (a stored result carries it: `approval {approved, by, decision, reason}`).
//
// Every label is drawn from a key of i18n.js with its values (`el`'s `i18n`, `i18n.label`), never as finished
// text: a switch of language relabels the old cards too — "Tool …", the states, "Approved by …".
"use strict";

(function () {
  const H = window.hologram;
  const { el, api } = H;
  const { label } = window.i18n;
  const { renderMarkdown } = window.markdown;

  // a tool result's status (hologram.api.turn.ToolResult) → its label; another status is shown as it came
  const STATES = ["ok", "error", "denied", "skipped", "invalid", "answered", "unknown"];
  // who decided an approval, when it is not a client's own name
  const DECIDERS = ["http", "policy", "kernel"];
  const STOPS = ["max_steps", "max_tool_calls", "max_time", "loop", "denied", "respond", "error"];

  function pretty(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
    }
    return JSON.stringify(value, null, 2);
  }

  /** Who decided, as an i18n var: the page, the rules and the kernel in words; a client by its name. */
  const decider = (by) => (DECIDERS.includes(by) ? { t: "chat.by." + by } : String(by || "?"));

  /** A card's state: a key of i18n.js (or a status this page does not know, shown as it is). */
  function setState(c, state) {
    c.state.dataset.state = state;
    c.state.className = "state " + state;
    if (state === "running") label(c.state, "chat.running");
    else if (state === "waiting") label(c.state, "chat.waiting_approval");
    else if (state === "unfinished") label(c.state, "chat.state.unfinished");
    else if (STATES.includes(state)) label(c.state, "chat.state." + state);
    else { delete c.state.dataset.i18n; c.state.textContent = state; }
  }

  class Turn {
    /** `where(node)` puts the turn's node in the transcript. `session()`: the open session's id. */
    constructor(id, where, session) {
      this.id = id;
      this.session = session;
      this.node = el("div", { class: "turn", dataset: { turn: id || "" } });
      this.calls = new Map();
      this.reset();
      where(this.node);
    }

    reset(text) {
      this.calls.clear();
      this.last = null; // {kind: "text"|"reasoning", node, raw}
      this.user = el("div", { class: "msg user", "data-testid": "user-message" });
      this.answer = el("div", { class: "msg assistant", "data-testid": "assistant-message" },
        el("div", { class: "who", i18n: "chat.assistant" }));
      this.note = el("div", { class: "turn-note" });
      this.answer.hidden = true;
      this.node.replaceChildren(this.user, this.answer, this.note);
      delete this.node.dataset.ended;
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
          el("summary", { i18n: "chat.reasoning" }), el("div", { class: "body" }));
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
      if (c) { if (tool && !c.tool) { c.tool = tool; label(c.title, "chat.tool", { tool }); } return c; }
      this.answer.hidden = false;
      c = { tool };
      c.title = el("span", { class: "title", i18n: ["chat.tool", { tool: tool || "?" }] });
      c.state = el("span", { class: "state" });
      setState(c, "running");
      c.args = el("pre", { class: "args" });
      c.output = el("pre", { class: "output" });
      c.result = el("pre", { class: "result" });
      c.outputPart = el("div", { class: "part", hidden: true }, el("div", { class: "label", i18n: "chat.output" }), c.output);
      c.resultPart = el("div", { class: "part", hidden: true }, el("div", { class: "label", i18n: "chat.result" }), c.result);
      c.images = el("div", { class: "images" });
      c.imagesPart = el("div", { class: "part", hidden: true }, el("div", { class: "label", i18n: "chat.images" }), c.images);
      c.approval = el("div", { class: "approval", hidden: true });
      c.node = el("div", { class: "tool", "data-testid": "tool-card", dataset: { callId } },
        el("div", { class: "head" }, c.title, c.state),
        el("div", { class: "part" }, el("div", { class: "label", i18n: "chat.arguments" }), c.args),
        c.approval, c.outputPart, c.resultPart, c.imagesPart);
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

    result(callId, tool, content, status, isError, images) {
      const c = this.card(callId, tool);
      c.resultPart.hidden = false;
      c.result.textContent = content === null || content === undefined ? "" : String(content);
      this.images(c, images);
      setState(c, status || (isError ? "error" : "ok"));
      c.approval.classList.remove("pending");
      c.approval.hidden = !c.approval.dataset.decided;
    }

    /** The images a result carried (`tool.result`'s `images`, or the stored result's): each from the media route
     *  (the kernel's `media/read`), its link opening it full size in a new tab. Ids are sha256 hex, checked here
     *  too, so nothing else lands in the URL. */
    images(c, images) {
      const valid = (images || []).filter((m) => m && typeof m.id === "string" && /^[0-9a-f]{64}$/.test(m.id));
      c.imagesPart.hidden = valid.length === 0;
      c.images.replaceChildren(...valid.map((m) => {
        const src = `/api/sessions/${encodeURIComponent(this.session())}/media/${m.id}`;
        const img = el("img", { src, "data-testid": "tool-image", dataset: { media: m.id },
          i18nAlt: ["chat.image_alt", { tool: c.tool || "?" }] });
        if (m.width && m.height) { img.width = Math.min(m.width, 480); img.style.aspectRatio = `${m.width} / ${m.height}`; }
        return el("a", { href: src, target: "_blank", rel: "noopener", class: "tool-image", i18nTitle: "chat.image_open" }, img);
      }));
    }

    approvalRequested(ev) {
      const c = this.card(ev.call_id, ev.tool);
      if (ev.arguments !== undefined && !c.args.textContent) c.args.textContent = pretty(ev.arguments);
      // a decision (docs/protocol.md §9): once, the rest of this session, always (the policy), or no
      const decide = (decision) => async () => {
        for (const b of c.approval.querySelectorAll("button")) b.disabled = true;
        const path = `/api/sessions/${encodeURIComponent(this.session())}/approvals/${encodeURIComponent(ev.approval)}`;
        try { await api("POST", path, { decision }); }
        catch (e) { H.showNotice(e.message); for (const b of c.approval.querySelectorAll("button")) b.disabled = false; }
      };
      const button = (cls, testid, key, decision) =>
        el("button", { class: cls, "data-testid": testid + ev.call_id, i18n: key, onclick: decide(decision) });
      c.approval.replaceChildren(...[
        ev.summary ? el("span", { class: "summary", text: ev.summary + " — " }) : null,
        el("span", { i18n: "chat.approval" }),
        button("approve primary", "approve-", "btn.approve", "approve_once"),
        button("approve-session", "approve-session-", "btn.approve_session", "approve_for_session"),
        button("approve-always", "approve-always-", "btn.approve_always", "always"),
        button("deny danger", "deny-", "btn.deny", "deny")].filter(Boolean));
      c.approval.classList.add("pending");
      delete c.approval.dataset.decided;
      c.approval.hidden = false;
      setState(c, "waiting");
    }

    /** A decision, live (approval.resolved) or stored with the result (its `approval`). */
    decided(callId, d) {
      const c = this.card(callId);
      const approvedKey = { approve_for_session: "chat.approved_session", always: "chat.approved_always" }[d.decision] || "chat.approved";
      c.approval.replaceChildren(...[
        el("span", { class: "decision", dataset: { decision: d.decision || "", approved: d.approved ? "1" : "" },
          i18n: [d.approved ? approvedKey : "chat.denied", { by: decider(d.by) }] }),
        // why, for a refusal (the kernel's words: a timeout, nobody to ask); a yes says it all in its key
        !d.approved && d.reason ? el("span", { class: "reason", text: " (" + d.reason + ")" }) : null].filter(Boolean));
      c.approval.classList.remove("pending");
      c.approval.dataset.decided = "1";
      c.approval.hidden = false;
      if (c.state.dataset.state === "waiting") setState(c, d.approved ? "running" : "denied");
    }

    ended(ev) {
      const reason = ev.stop_reason;
      if (reason === "cancelled") label(this.note, "chat.cancelled");
      else if (reason === "error" && this.note.classList.contains("error")) { /* turn.error said why: keep it */ }
      else if (reason && reason !== "answer") label(this.note, "chat.stop_reason", { reason: STOPS.includes(reason) ? { t: "chat.stop." + reason } : reason });
      for (const c of this.calls.values()) {
        const state = c.state.dataset.state;
        if (state === "running" || state === "waiting") setState(c, "unfinished");
        c.approval.classList.remove("pending");
        if (!c.approval.dataset.decided) c.approval.hidden = true;
      }
      this.node.dataset.ended = reason || "answer";
    }

    error(ev) {
      this.note.className = "turn-note error";
      label(this.note, "chat.error", { message: ev.message });
    }
  }

  H.Turn = Turn;
  H.pretty = pretty;
})();
