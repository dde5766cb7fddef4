// Where the chat keeps you. While you are at the bottom it follows the newest event, however tall (a 2,000-line
// tool output, a long answer in one delta); when you scroll up it stops and a "Jump to latest" button appears,
// which brings you back and follows again. After a reload or a reopen it lands on the running turn (the bottom)
// or, when a tool call waits for approval, on that card with its buttons on screen — also when the card is not
// the last thing drawn (the calls after it in the same step).
//
// Why it tracks a state instead of measuring after each event (as the page did): measuring "near the bottom"
// after an event was drawn failed for any event taller than the margin, and following stopped for good. Here
// `following` changes only when *you* scroll: the page's own scrolls are recognised by the position they
// left, and content that grows does not fire scroll events at all. Browser scroll anchoring is off (app.css:
// `overflow-anchor: none`): its adjustments would look like a scroll of yours.
"use strict";

(function () {
  const NEAR = 24; // px from the bottom that still count as "at the bottom" (a wheel notch leaves it)
  let following = true;
  let pinApproval = true; // keep the first pending approval on screen (after a reload or reopen, when one comes)
  let ownY = null; // the scroll position the page's last own scroll left
  let queued = false;

  const root = () => document.documentElement;
  const maxY = () => Math.max(0, root().scrollHeight - window.innerHeight);
  const atBottom = () => window.scrollY >= maxY() - NEAR;
  const chatShown = () => !document.getElementById("view-chat").hidden;
  const button = () => document.getElementById("chat-jump");

  /** Where following puts the view: the bottom, or higher so that a pending approval stays in sight. */
  function target() {
    const bottom = maxY();
    const pending = pinApproval && document.querySelector("#messages .tool .approval.pending");
    if (!pending) return bottom;
    const header = document.querySelector("header.top").getBoundingClientRect().bottom;
    const top = pending.closest(".tool").getBoundingClientRect().top + window.scrollY - header - 12;
    return Math.max(0, Math.min(bottom, top));
  }

  function settle() {
    queued = false;
    if (!chatShown()) return;
    if (following) {
      const y = target();
      if (Math.abs(window.scrollY - y) > 1) window.scrollTo(0, y);
      ownY = window.scrollY;
    }
    button().hidden = following || atBottom();
  }

  /** Something was drawn: follow it on the next frame (one scroll per frame, however many events came). */
  function changed() {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(settle);
  }

  window.addEventListener("scroll", () => {
    if (!chatShown()) return;
    if (ownY !== null && Math.abs(window.scrollY - ownY) <= 1) return; // the page's own scroll
    ownY = null;
    const bottom = atBottom();
    if (bottom && !following) { following = true; pinApproval = false; } // back at the newest: follow it
    else if (!bottom && following) following = false; // you scrolled away: stay where you are
    button().hidden = following || bottom;
  }, { passive: true });
  window.addEventListener("resize", changed);

  button().addEventListener("click", () => window.hologram.follow.toLatest());

  window.hologram.follow = {
    changed,
    /** A session was opened (a reload, a reopen, a new one): land on its running turn or pending approval. */
    land() { following = true; pinApproval = true; ownY = null; changed(); },
    /** An approval request came: while following, keep it on screen until it is answered. */
    approvalArrived() { if (following) pinApproval = true; },
    /** Jump to the newest and follow it (the button; sending a message). */
    toLatest() { following = true; pinApproval = false; ownY = null; settle(); },
  };
})();
