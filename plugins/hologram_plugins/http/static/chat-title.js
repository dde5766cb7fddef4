// The open session's title at the head of the chat, and renaming it in place.
//
// The kernel titles a new session from its first input (docs/protocol.md, "Titles"), so the title shown is the
// one every client lists; Rename (or a click on the title) turns it into a field: Enter or leaving the field
// saves (`PATCH /api/sessions/{sid}`), Escape keeps the old one. An Enter that confirms an input method's
// candidate does not save, as in the composer.
"use strict";

(function () {
  const H = window.hologram;
  const { api } = H;
  const { label } = window.i18n;
  const enc = encodeURIComponent;

  let sid = null;
  let title = "";
  let composing = false;

  const heading = () => document.getElementById("chat-title");
  const field = () => document.getElementById("chat-title-input");
  const renameButton = () => document.getElementById("chat-rename");

  /** Show session `session`'s title (`text`; "" when it has none); null: a new conversation, not stored yet. */
  function show(session, text) {
    const changed = session !== sid;
    sid = session;
    title = text || "";
    const h = heading();
    if (!sid) label(h, "chat.new_conversation");
    else if (!title) label(h, "sessions.untitled");
    else { delete h.dataset.i18n; delete h.dataset.i18nVars; h.textContent = title; }
    h.classList.toggle("untitled", !title);
    const id = document.getElementById("chat-session");
    if (sid) label(id, "chat.session", { id: sid });
    else { delete id.dataset.i18n; delete id.dataset.i18nVars; id.textContent = ""; }
    if (changed) stop();
    renameButton().hidden = !sid || !field().hidden;
  }

  /** Read the title again (renamed elsewhere meanwhile): the newest event only, with the session's title. */
  async function load(session) {
    if (!session) { show(null, ""); return; }
    try {
      const r = await api("GET", `/api/sessions/${enc(session)}?limit=1`);
      if (session === H.chat.current()) show(session, r.title || "");
    } catch (e) { /* the chat reports a missing session itself */ }
  }

  function edit() {
    if (!sid) return;
    const f = field();
    f.value = title;
    heading().hidden = true;
    renameButton().hidden = true;
    f.hidden = false;
    f.focus();
    f.select();
  }

  function stop() {
    field().hidden = true;
    heading().hidden = false;
    renameButton().hidden = !sid;
  }

  async function save() {
    if (field().hidden) return;
    const text = field().value.trim();
    const session = sid;
    stop();
    if (!text || text === title || !session) return;
    try {
      const r = await api("PATCH", `/api/sessions/${enc(session)}`, { title: text });
      if (session === sid) show(session, r.title);
    } catch (e) { H.showNotice(e.message); }
  }

  renameButton().addEventListener("click", edit);
  heading().addEventListener("click", edit);
  const f = field();
  f.addEventListener("compositionstart", () => { composing = true; });
  f.addEventListener("compositionend", () => { setTimeout(() => { composing = false; }, 0); });
  f.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { ev.preventDefault(); stop(); return; }
    if (ev.key !== "Enter" || ev.isComposing || composing || ev.keyCode === 229) return;
    ev.preventDefault();
    save();
  });
  f.addEventListener("blur", save);

  H.chatTitle = { show, load };
})();
