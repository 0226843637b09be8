/* Build Kafka: small JS islands on top of pages that already work without JS.
 *
 * Everything here is optional: links and forms carry the state, htmx swaps the panels. This file
 * only adds what HTML cannot do alone: play/pause, copying to the clipboard, a theme switch
 * without a reload, live <output> values, and a full-page fallback when an htmx request fails.
 * Handlers are delegated from `document`, so panels swapped in by htmx need no re-binding.
 */
(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.add("js");

  // -- play / pause: press "Step" on a timer until the end of the timeline --------------------
  var timer = null;
  function playButton() { return document.querySelector("[data-play]"); }
  function speedMs() {
    var select = document.querySelector("[data-speed]");
    var ms = select ? parseInt(select.value, 10) : 800;
    return isNaN(ms) ? 800 : Math.max(100, Math.min(ms, 5000));
  }
  function setPlaying(on) {
    var button = playButton();
    if (timer) { clearTimeout(timer); timer = null; }
    if (button) {
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.textContent = on ? "⏸ Pause" : "▶ Play";
    }
    if (on) { tick(); }
  }
  function tick() {
    // htmx fires afterSettle once per swapped panel: restart the one timer, never stack them.
    if (timer) { clearTimeout(timer); timer = null; }
    var forward = document.getElementById("step-forward");
    if (!forward || forward.tagName !== "A") { setPlaying(false); return; }
    timer = setTimeout(function () {
      var next = document.getElementById("step-forward");
      if (!next || next.tagName !== "A") { setPlaying(false); return; }
      next.click();
    }, speedMs());
  }
  // Scrolling lists (event log, metadata log) show their newest lines, on load and after swaps.
  function autoscroll() {
    document.querySelectorAll("[data-autoscroll]").forEach(function (list) {
      list.scrollTop = list.scrollHeight;
    });
  }
  document.addEventListener("DOMContentLoaded", autoscroll);
  document.addEventListener("htmx:afterSettle", function () {
    if (timer !== null) { tick(); }
    autoscroll();
  });

  // -- pseudocode highlight: a step update sends only #code-now, naming the lit lines ---------
  // (data-lines) and the open blocks (data-open); the lines themselves stay in the page.
  function highlightCode() {
    var now = document.getElementById("code-now");
    if (!now) { return; }
    var lit = (now.getAttribute("data-lines") || "").split(" ").filter(Boolean);
    var open = (now.getAttribute("data-open") || "").split(" ").filter(Boolean);
    document.querySelectorAll(".pseudo li.active").forEach(function (li) {
      if (lit.indexOf(li.id) < 0) { li.classList.remove("active"); li.removeAttribute("aria-current"); }
    });
    lit.forEach(function (id) {
      var li = document.getElementById(id);
      if (li) { li.classList.add("active"); li.setAttribute("aria-current", "true"); }
    });
    document.querySelectorAll("details.code-block").forEach(function (block) {
      block.open = open.indexOf(block.id) >= 0;
    });
  }
  document.addEventListener("htmx:afterSettle", function (event) {
    highlightCode();
  });

  // -- one diagram geometry per step update ---------------------------------------------------
  // The page holds the wide and the phone drawing and a container query in app.css shows the one
  // that fits the run's width. A step update only needs that one: every htmx request names it
  // (X-Diagram), and when a resize crosses the breakpoint the current state is fetched again.
  var DIAGRAM_BREAK_PX = 620; // the container query's max-width in app.css
  function geometry() {
    var run = document.querySelector(".diagram.run");
    if (!run) { return null; }
    var style = getComputedStyle(run);
    var width = run.clientWidth - parseFloat(style.paddingLeft || "0") - parseFloat(style.paddingRight || "0");
    return width <= DIAGRAM_BREAK_PX ? "narrow" : "wide";
  }
  document.addEventListener("htmx:configRequest", function (event) {
    var which = geometry();
    if (which) { event.detail.headers["X-Diagram"] = which; }
    // the panels this page holds and their hashes, so unchanged ones are not sent again
    var held = document.getElementById("panel-hashes");
    if (held) { event.detail.headers["X-Panels"] = held.getAttribute("data-h") || ""; }
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    if (resizeTimer) { clearTimeout(resizeTimer); }
    resizeTimer = setTimeout(function () {
      var lone = document.querySelector(".svg-wrap.only .cluster");
      var which = geometry();
      if (lone && which && !lone.classList.contains(which) && window.htmx) {
        // a workshop page shows a scene state that is not its own address (static/workshop.js)
        var here = window.bkSceneUrl ? window.bkSceneUrl() : window.location.href;
        window.htmx.ajax("GET", here, { source: "#diagram", swap: "none", headers: { "X-Workshop-Sync": "1" } });
      }
    }, 200);
  });

  // -- keep keyboard focus across panel swaps ------------------------------------------------
  // htmx restores focus by id when a swap replaces the focused element (its id survives the
  // swap). This is the fallback for any swap that still leaves focus on <body>: remember the
  // focused control's id when a request starts and put focus back after the swap settles.
  // (The old flake, focus on <body> after a quick second Enter, was a full page load: see the
  // htmx-config settle delay in templates/base.html.)
  // A fault button can vanish with the swap ("Crash broker 2" becomes "Restart broker 2"): then
  // focus goes to the first button left in that broker's row, so Tab does not restart at the top.
  var focusedId = null;
  var fallback = null;
  // The caption's "Next beat" link is gone once the next beat starts: focus goes to Step.
  // Each entry is tried in turn (a selector list would take the first match in page order).
  function fallbackFor(el) {
    if (el && el.id === "caption-next") { return ["#step-forward"]; }
    // at the last stop Step is no longer a link: go on to the caption's "Next beat", else Back
    if (el && el.id === "step-forward") { return ["#caption-next", "#step-back"]; }
    var m = el && el.id && /^fault-.+-(\d+)$/.exec(el.id);
    return m ? ["#faults button[id$='-" + m[1] + "']"] : null;
  }
  function firstOf(selectors) {
    for (var i = 0; selectors && i < selectors.length; i++) {
      var found = document.querySelector(selectors[i]);
      if (found) { return found; }
    }
    return null;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var active = document.activeElement;
    var elt = event.detail && event.detail.elt;
    if (active && active !== document.body && active.id) { focusedId = active.id; }
    else if (elt && elt.id && elt.matches(":focus-visible, a, input, select, button")) { focusedId = elt.id; }
    else { focusedId = null; }
    fallback = focusedId ? fallbackFor(document.getElementById(focusedId)) : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!focusedId) { return; }
    var active = document.activeElement;
    if (!active || active === document.body) {
      var again = document.getElementById(focusedId);
      if (again && !again.matches("a[href], button:not([disabled]), input, select, [tabindex]")) { again = null; }
      again = again || firstOf(fallback);
      if (again) { again.focus({ preventScroll: true }); }
    }
  });

  // -- the Step key: → or N steps, ← or P goes back ------------------------------------------
  // It clicks the bar's own links (#step-forward, #step-back), so a key press is exactly a
  // click: the same htmx request, the same focus handling, the same history entry. Keys typed
  // into a field, or arrows inside something that scrolls sideways or moves a slider, are left
  // alone; so is any key while a step is still loading (a held-down key would otherwise fire a
  // burst of requests for the same step).
  var STEP_KEYS = { ArrowRight: "step-forward", n: "step-forward", N: "step-forward",
    ArrowLeft: "step-back", p: "step-back", P: "step-back" };
  function typingIn(el) {
    if (!(el instanceof Element)) { return false; }
    if (el.isContentEditable) { return true; }
    return !!el.closest("input, textarea, select, [role='slider'], [role='textbox'], [role='combobox']");
  }
  function scrollsSideways(el) {
    for (var node = el; node instanceof Element && node !== document.body; node = node.parentElement) {
      if (node.scrollWidth > node.clientWidth + 1) {
        var overflow = getComputedStyle(node).overflowX;
        if (overflow === "auto" || overflow === "scroll") { return true; }
      }
    }
    return false;
  }
  document.addEventListener("keydown", function (event) {
    var id = STEP_KEYS[event.key];
    if (!id || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.shiftKey && event.key.indexOf("Arrow") === 0) { return; }
    var target = event.target;
    if (typingIn(target)) { return; }
    if (event.key.indexOf("Arrow") === 0 && scrollsSideways(target)) { return; }
    var link = document.getElementById(id);
    // at a beat's last stop Step has nowhere to go: the key follows the caption's "Next beat" (or
    // "Next scene") link instead of doing nothing (the new-learner check found a dead end there)
    if (id === "step-forward" && (!link || link.tagName !== "A")) { link = document.getElementById("caption-next"); }
    event.preventDefault();  // an arrow would otherwise scroll the page
    if (!link || link.tagName !== "A" || document.querySelector(".htmx-request")) { return; }
    if (timer !== null) { setPlaying(false); }  // stepping by hand pauses playback, as a click does
    link.click();
  });

  // -- Space presses the Step and Back links ---------------------------------------------------
  // They are links that act as buttons (role="button" in templates/_stepbar.html); a link ignores
  // Space and the page scrolls instead. A held-down Space presses once.
  document.addEventListener("keydown", function (event) {
    if (event.key !== " " || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var link = event.target instanceof Element ? event.target.closest("a[role='button'][href]") : null;
    if (!link) { return; }
    event.preventDefault();
    if (event.repeat || document.querySelector(".htmx-request")) { return; }
    if (timer !== null) { setPlaying(false); }
    link.click();
  });

  // -- show the diagram react to a beat, a key moment, a fault, "Run until quiet" ----------------
  // Those controls sit below the viewer (on a phone, far below). Controls marked data-reveal bring
  // the viewer's top into view once their swap has settled, unless it is in view already. Step
  // and Back are not marked: stepping never moves the page (tests/browser/test_layout.py).
  var reveal = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var detail = event.detail || {};
    var elt = detail.elt;
    // a fault button submits a hidden state form (_here.html): the request's element is that form,
    // and the button is the submit event's submitter
    var trigger = detail.requestConfig && detail.requestConfig.triggeringEvent;
    var submitter = trigger && trigger.submitter;
    reveal = [elt, submitter].some(function (e) { return !!(e && e.closest && e.closest("[data-reveal]")); });
  });
  function revealViewer() {
    var viewer = document.querySelector(".viewer");
    if (!viewer) { return; }
    var top = viewer.getBoundingClientRect().top;
    if (top >= 0 && top <= window.innerHeight / 3) { return; }  // in view, with the drawing under it
    viewer.scrollIntoView({ block: "start", behavior: "auto" });
  }
  document.addEventListener("htmx:afterSettle", function () {
    if (!reveal) { return; }
    reveal = false;
    // htmx settles each swapped panel in turn: wait until all of them are in
    requestAnimationFrame(revealViewer);
  });

  // -- on a phone, the caption stays clear of the pinned Step bar -------------------------------
  // The bar rides at the bottom of the screen (static/app.css) and the caption follows the
  // diagram in the page, so a tall diagram leaves the caption under the bar. After Step or Back
  // (the bar's links, or the Step key, which clicks them) the page scrolls by just what it takes to
  // show the whole caption above the bar, or its top when it is taller than the room. The heights
  // do not change within a beat, so this scrolls at most once; the next steps find it in view.
  var CAPTION_GAP_PX = 6;
  var stepped = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    stepped = !!(elt && elt.closest && elt.closest("#stepbar"));
  });
  function captionClearOfBar() {
    var bar = document.getElementById("stepbar");
    var caption = document.getElementById("caption");
    if (!bar || !caption || getComputedStyle(bar).position !== "fixed") { return; }
    var room = bar.getBoundingClientRect().top - CAPTION_GAP_PX;
    var box = caption.getBoundingClientRect();
    var by = 0;
    if (box.bottom > room) { by = box.bottom - room; }
    if (box.top - by < CAPTION_GAP_PX) { by = box.top - CAPTION_GAP_PX; }  // taller than the room
    if (Math.abs(by) >= 1) { window.scrollBy({ top: Math.round(by), behavior: "instant" }); }
  }
  document.addEventListener("htmx:afterSettle", function () {
    if (!stepped) { return; }
    stepped = false;
    requestAnimationFrame(captionClearOfBar);  // htmx settles each swapped panel in turn
  });

  // -- a Q&A answer opened by a question is shown --------------------------------------------------
  // The answer comes after the list of questions, so a question tapped near the list's end opens
  // it off screen, or under a phone's pinned Step bar: bring its top into view (scroll-padding in
  // static/app.css keeps it clear of the bar). Only for a question asked: stepping moves nothing.
  var asked = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var trigger = event.detail && event.detail.requestConfig && event.detail.requestConfig.triggeringEvent;
    var submitter = trigger && trigger.submitter;
    asked = !!(submitter && submitter.closest && submitter.closest("#qa .questions"));
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!asked) { return; }
    asked = false;
    requestAnimationFrame(function () {
      var answer = document.querySelector("#qa .answer");
      if (!answer) { return; }
      var bar = document.getElementById("stepbar");
      var fixed = bar && getComputedStyle(bar).position === "fixed";
      var bottom = fixed ? bar.getBoundingClientRect().top : window.innerHeight;
      var top = answer.getBoundingClientRect().top;
      if (top < 0 || top > bottom - 80) { answer.scrollIntoView({ block: "start", behavior: "auto" }); }
    });
  });

  // -- the diagram in words stays open from step to step ----------------------------------------
  var describeOpen = false;
  document.addEventListener("htmx:beforeRequest", function () {
    var describe = document.getElementById("describe");
    describeOpen = !!(describe && describe.open);
  });
  document.addEventListener("htmx:afterSettle", function () {
    var describe = document.getElementById("describe");
    if (describeOpen && describe && !describe.open) { describe.open = true; }
  });

  // -- glossary definitions stay on screen ----------------------------------------------------------
  // A term's definition shows under it as a tooltip on hover or keyboard focus (static/app.css),
  // starting at the term's left edge. Near either edge of the screen that would run off it, so the
  // tooltip is moved sideways by what sticks out, and kept EDGE_PX clear of both edges. Opened by a
  // click or a tap it is a popover centred on the screen; the tooltip's offsets must not follow it
  // there (a tap focuses the term first: on a phone the card sat 8 px off the left edge), so they
  // are cleared when it opens, and worked out again when it closes.
  var EDGE_PX = 8;
  function clearTip(tip) {
    tip.style.removeProperty("left");
    tip.style.removeProperty("top");
    tip.style.removeProperty("bottom");
  }
  function placeTip(term) {
    var tip = term && term.parentElement && term.parentElement.querySelector(".gl-tip");
    if (!tip) { return; }
    clearTip(tip);
    if (tip.matches(":popover-open")) { return; }
    var box = tip.getBoundingClientRect();
    if (!box.width) { return; }
    var width = document.documentElement.clientWidth;
    var shift = 0;
    if (box.right > width - EDGE_PX) { shift = width - EDGE_PX - box.right; }
    if (box.left + shift < EDGE_PX) { shift = EDGE_PX - box.left; }
    if (shift) { tip.style.left = Math.round(shift) + "px"; }
    // near the bottom of the screen it opens above the term instead, when there is room there
    if (box.bottom > window.innerHeight - EDGE_PX && term.getBoundingClientRect().top > box.height + EDGE_PX) {
      tip.style.top = "auto";
      tip.style.bottom = "calc(100% + 4px)";
    }
  }
  // the popover's toggle event does not bubble: listen in the capture phase
  document.addEventListener("toggle", function (event) {
    var tip = event.target instanceof Element && event.target.matches(".gl-tip") ? event.target : null;
    if (!tip) { return; }
    if (event.newState === "open") { clearTip(tip); return; }
    var term = tip.parentElement && tip.parentElement.querySelector(".gl-term");
    if (term && (term.matches(":focus-visible") || term.parentElement.matches(":hover"))) {
      requestAnimationFrame(function () { placeTip(term); });
    }
  }, true);
  // Escape hides the definition shown on hover or focus, until the pointer or focus leaves
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    var active = document.activeElement;
    var gl = (active && active.closest && active.closest(".gl")) || document.querySelector(".gl:hover");
    if (gl && !gl.querySelector(".gl-tip:popover-open")) { gl.classList.add("gl-dismissed"); }
  });
  ["focusout", "mouseout"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var gl = event.target instanceof Element ? event.target.closest(".gl.gl-dismissed") : null;
      if (gl && !(event.relatedTarget instanceof Node && gl.contains(event.relatedTarget))) {
        gl.classList.remove("gl-dismissed");
      }
    });
  });
  function termOf(event) {
    var target = event.target instanceof Element ? event.target : null;
    var gl = target && target.closest(".gl");
    return gl ? gl.querySelector(".gl-term") : null;
  }
  ["focusin", "mouseover"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var term = termOf(event);
      if (term) { requestAnimationFrame(function () { placeTip(term); }); }
    });
  });

  // -- the staff engineer's answer: asked below the fold, it must come into view ----------------
  // A question tapped or typed in the Q&A panel swaps the whole panel; bring the answer (or the
  // search results) into view and move focus there, so the screen reader reads it out too.
  var askedInQa = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    askedInQa = !!(elt && elt.closest && elt.closest("#qa"));
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!askedInQa) { return; }
    askedInQa = false;
    var target = document.querySelector("#qa .answer, #qa .results");
    if (!target) { return; }
    target.setAttribute("tabindex", "-1");
    target.scrollIntoView({ block: "nearest" });
    target.focus({ preventScroll: true });
  });

  // -- clipboard ------------------------------------------------------------------------------
  function copied(button, ok) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = ok ? "Copied ✓" : "Select and copy by hand";
    setTimeout(function () { button.textContent = label; }, 2000);
  }
  function copyText(button, text, fallbackField) {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { copied(button, true); },
        function () { copied(button, false); });
      return;
    }
    if (fallbackField) { fallbackField.focus(); fallbackField.select(); }
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    copied(button, ok);
  }

  // -- delegated events -----------------------------------------------------------------------
  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) { return; }
    var play = target.closest("[data-play]");
    if (play) { setPlaying(play.getAttribute("aria-pressed") !== "true"); return; }
    var copy = target.closest("[data-copy]");
    if (copy) { copyText(copy, copy.getAttribute("data-copy"), null); return; }
    var copyFrom = target.closest("[data-copy-from]");
    if (copyFrom) {
      var field = document.getElementById(copyFrom.getAttribute("data-copy-from"));
      if (field) { copyText(copyFrom, field.value, field); }
      return;
    }
    var theme = target.closest("[data-theme-set]");
    if (theme && !event.metaKey && !event.ctrlKey) {
      var value = theme.getAttribute("data-theme-set");
      document.cookie = "theme=" + value + "; path=/; max-age=31536000; samesite=lax";
      root.setAttribute("data-theme", value);
      document.querySelectorAll("[data-theme-set]").forEach(function (a) {
        if (a === theme) { a.setAttribute("aria-current", "true"); } else { a.removeAttribute("aria-current"); }
      });
      event.preventDefault();
      return;
    }
    // a step link pressed by hand pauses playback
    if (timer !== null && event.isTrusted && target.closest(".step-nav, .stepbar, .faults, .beat-nav")) {
      setPlaying(false);
    }
  });

  // a duration knob's value in words while the slider moves, as app/formats.py sim_time says it
  // on the server ("1 day 2 hours", "30 s"): whole units only, which is what the sliders step by
  function humanMs(ms) {
    if (ms < 1000) { return ms + " ms"; }
    var units = [[86400000, "day", "days"], [3600000, "hour", "hours"], [60000, "min", "min"]];
    var parts = [], rest = ms;
    units.forEach(function (u) {
      var n = Math.floor(rest / u[0]);
      rest -= n * u[0];
      if (n || parts.length) { parts.push(n + " " + (n === 1 ? u[1] : u[2])); }
    });
    if (rest) { parts.push(rest / 1000 + " s"); }
    while (parts.length > 1 && parts[parts.length - 1].indexOf("0 ") === 0) { parts.pop(); }
    return parts.join(" ");
  }

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (input instanceof HTMLInputElement && input.type === "range") {
      var out = input.parentElement && input.parentElement.querySelector("output");
      if (out) { out.textContent = input.value; }
      var knob = input.closest(".knob");
      var human = knob && knob.querySelector("[data-human-ms]");
      if (human) {
        var ms = Number(input.value);
        human.textContent = ms >= 1000 ? "= " + humanMs(ms) : "";
      }
    }
  });

  // The speed menu lives inside the controls form but is not state: keep its change to itself.
  document.addEventListener("change", function (event) {
    if (event.target instanceof Element && event.target.matches("[data-speed]")) {
      event.stopPropagation();
      if (timer !== null) { setPlaying(true); }
    }
  }, true);

  // An htmx request that fails (400 bad URL, 404, ...) gets the full error page instead.
  document.addEventListener("htmx:responseError", function (event) {
    var info = event.detail && event.detail.pathInfo;
    var path = info && (info.finalRequestPath || info.requestPath);
    if (path) { window.location.assign(path); }
  });
})();
