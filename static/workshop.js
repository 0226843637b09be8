// Build Kafka workshops: the page side of app/workshops/ (loaded on workshop pages only).
//
// A workshop page is a scene page with a workshop bar (#ws-bar). Its event stream (SSE) says
// where the presenter is; a following participant's page then asks for that scene URL exactly
// as a Step click would (htmx, the same step update), so what the room sees is rendered by the
// one scene code path. The presenter's page, after each of its own step updates, sends its new
// scene URL to the workshop. The browser reconnects a dropped stream with Last-Event-ID, so a
// server restart resumes where it stopped.
(function () {
  "use strict";
  var bar = document.getElementById("ws-bar");
  if (!bar || !window.EventSource || !window.fetch) { return; }
  var code = bar.getAttribute("data-workshop");
  var presenter = bar.getAttribute("data-role") === "presenter";
  var token = bar.getAttribute("data-token") || "";
  var lastSeq = parseInt(bar.getAttribute("data-seq"), 10) || 0;
  var sceneUrl = bar.getAttribute("data-scene-url");  // the scene state this page shows now
  var following = bar.getAttribute("data-following") === "1";
  var base = "/w/" + code;
  // the presenter's page, or its notes window (?view=notes), as it was opened: a scene change reloads it
  var ownPage = window.location.pathname + window.location.search;
  var SYNC = "X-Workshop-Sync";

  function sceneOf(url) { var m = /^\/scenes\/([^/?#]+)/.exec(url || ""); return m ? m[1] : null; }
  function byId(id) { return document.getElementById(id); }
  function say(id, text) { var el = byId(id); if (el) { el.textContent = text; } }
  function controlHeaders(json) {
    var h = { "X-Presenter-Token": token };
    h["Content-Type"] = json ? "application/json" : "application/x-www-form-urlencoded";
    return h;
  }

  // app.js asks this for the page's scene URL (its diagram re-render on resize)
  window.bkSceneUrl = function () { return sceneUrl; };

  // -- every htmx request of this page ----------------------------------------------------------
  document.addEventListener("htmx:configRequest", function (event) {
    var d = event.detail;
    // the server compares with the state the page shows, which is not this page's own address
    d.headers["HX-Current-URL"] = window.location.origin + sceneUrl;
    if (presenter) { d.headers["X-Workshop"] = "presenter"; }
    // a participant who steps, changes a knob or crashes a broker is exploring; answering the
    // beat's prediction or asking the Q&A panel keeps the step, so it is not
    var own = d.elt && /^act-(guess|q|ask)$/.test(d.elt.id || "");
    if (!presenter && following && !d.headers[SYNC] && !own && /^\/scenes\//.test(d.path || "")) {
      detach();
    }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var d = event.detail;
    if (!d.successful || !d.xhr) { return; }
    var url = d.xhr.getResponseHeader("HX-Replace-Url") || d.xhr.getResponseHeader("HX-Push-Url");
    if (!url || !sceneOf(url)) { return; }
    sceneUrl = url;
    if (!presenter && !following) { window.history.replaceState(null, "", base + "?at=" + encodeURIComponent(url)); }
    var synced = d.requestConfig && d.requestConfig.headers && d.requestConfig.headers[SYNC];
    if (presenter && !synced) {
      publish(url);
      // teaching has begun: the join card folds to one line, unless the presenter chose otherwise
      if (!recall("join")) { setJoinCard(false); remember("join", "hidden"); }
    }
  });
  // a failed update must not take a workshop page away (app.js would open the error page)
  window.addEventListener("htmx:responseError", function (event) {
    event.stopPropagation();
    say(presenter ? "ws-sync" : "ws-where", "That update failed; the page shows the last state it had.");
  }, true);

  // -- the presenter sends each new state ----------------------------------------------------
  var publishing = false;
  var queued = null;
  function publish(url, then) {
    if (publishing) { queued = { url: url, then: then }; return; }
    publishing = true;
    fetch(base + "/state", { method: "POST", headers: controlHeaders(true), body: JSON.stringify({ url: url }) })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (data) { say("ws-sync", "The room sees this step."); if (then) { then(data); } })
      .catch(function (err) { say("ws-sync", "The room did not get this step (" + err.message + "); the next one tries again."); })
      .then(function () {
        publishing = false;
        if (queued) { var next = queued; queued = null; publish(next.url, next.then); }
      });
  }

  // -- following ----------------------------------------------------------------------------
  var syncing = false;
  var pending = null;
  var latest = null;  // the newest state the stream announced
  var healed = null;  // the one state a finished update re-asked for (never in a loop)
  function apply(url) {
    if (!url || url === sceneUrl) { return; }
    if (sceneOf(url) !== sceneOf(sceneUrl)) {  // another scene: its whole page
      window.location.assign(presenter ? ownPage : base);
      return;
    }
    if (syncing) { pending = url; return; }
    syncing = true;
    var headers = {};
    headers[SYNC] = "1";
    var finished = false;
    var done = function () {
      if (finished) { return; }
      finished = true;
      syncing = false;
      var next = pending;
      pending = null;
      // an update that ended elsewhere than the newest state (one overtaken while queued) asks
      // for the newest once more
      if (!next && latest && latest !== sceneUrl && healed !== latest) { healed = latest; next = latest; }
      if (next && (following || presenter)) { apply(next); }
    };
    setTimeout(done, 8000);  // a request that never settles must not stop the page following
    window.htmx.ajax("GET", url, { source: "#diagram", swap: "none", headers: headers }).then(done, done);
  }

  var presenterAt = null;
  var beatText = "";  // "beat 2 of 5: its title", where the presenter is
  function showBeat() {
    document.querySelectorAll(".ws-beat").forEach(function (el) { el.textContent = beatText; });
  }
  var presenterBeat = "";
  var narrow = window.matchMedia("(max-width: 640px)");
  function showWhere() {
    if (presenter) { return; }
    var where = presenterAt + (presenterBeat && !narrow.matches ? ": " + presenterBeat : "");
    say("ws-where", presenterAt && !following ? "The presenter is at " + where + "." : "");
  }
  // a following page whose drawing went out of view (a poll scrolled it there) gets it back
  // when the beat changes or the poll goes away
  function showViewer() {
    var viewer = document.querySelector(".viewer");
    if (presenter || !following || !viewer) { return; }
    var top = viewer.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight / 2) { viewer.scrollIntoView({ block: "start" }); }
  }
  function beatOf(url) { var m = /[?&]beat=([^&]*)/.exec(url || ""); return m ? m[1] : ""; }
  function setMode(follow) {
    following = follow;
    var detachBtn = byId("ws-detach");
    var followBtn = byId("ws-follow");
    if (detachBtn) { detachBtn.hidden = !follow; }
    if (followBtn) { followBtn.hidden = follow; }
    var mode = byId("ws-mode");
    if (mode) {
      mode.innerHTML = follow
        ? "<strong>Following the presenter</strong><span class=\"ws-more\"> · <span class=\"ws-beat\"></span></span>"
        : "<strong>Exploring on your own</strong><span class=\"ws-more\">: the presenter goes on without you.</span>";
    }
    if (follow && beatText) { showBeat(); }
    bar.classList.toggle("following", follow);
    bar.classList.toggle("exploring", !follow);
    document.body.classList.toggle("ws-following", follow);
    showWhere();
    fetch(base + "/mode", { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "detached=" + (follow ? "0" : "1") }).catch(function () {});
  }
  function detach() {
    if (!following) { return; }
    setMode(false);
    window.history.replaceState(null, "", base + "?at=" + encodeURIComponent(sceneUrl));
  }
  function catchUp() {
    fetch(base + "/state", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (data) { latest = data.url; if (following) { apply(data.url); } })
      .catch(function () {});
  }
  window.addEventListener("online", function () {
    if (source && source.readyState !== EventSource.OPEN) { source.close(); connect(); }
  });
  function follow() {
    if (presenter) { return; }
    // focus left on a fault button would crash a broker at the next Enter, and detach again
    if (document.activeElement && document.activeElement !== document.body) { document.activeElement.blur(); }
    setMode(true);
    fetch(base + "/state", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (sceneOf(data.url) !== sceneOf(sceneUrl)) { window.location.assign(base); return; }
        window.history.replaceState(null, "", base);
        apply(data.url);
        showViewer();
      })
      .catch(function () { say("ws-where", "Could not reach the workshop; trying again shortly."); });
  }

  // -- the event stream -----------------------------------------------------------------------
  var source = null;
  function connect() {
    var url = base + "/events?after=" + lastSeq + (presenter ? "&token=" + encodeURIComponent(token) : "");
    source = new EventSource(url);
    source.addEventListener("state", function (event) {
      var data = JSON.parse(event.data);
      lastSeq = Math.max(lastSeq, data.seq || 0);
      presenterAt = data.label || null;
      presenterBeat = data.title || "";
      beatText = (data.label || "").replace(/^scene \S+, /, "") + (data.title ? ": " + data.title : "");
      if (following || presenter) { showBeat(); }
      var newBeat = beatOf(data.url) !== beatOf(sceneUrl);
      latest = data.url;
      if (presenter || following) { apply(data.url); }
      if (newBeat || !pollNeedsMe()) { showViewer(); }
      showWhere();
    });
    source.addEventListener("poll", function (event) {
      var data = JSON.parse(event.data);
      lastSeq = Math.max(lastSeq, data.seq || 0);
      var shown = byId("ws-poll");
      var had = shown && !shown.hidden;
      refreshPoll(!presenter && data.action !== "close" && data.action !== "hide");
      if (data.action === "hide") {
        showViewer();
        if (had && !presenter) {  // say why it went, for a moment
          say("ws-where", "The presenter closed the poll.");
          setTimeout(showWhere, 6000);
        }
      }
    });
    source.addEventListener("end", function () {
      source.close();
      ended();
    });
    source.addEventListener("room", function (event) {
      var room = JSON.parse(event.data);
      say("ws-connected", String(room.connected));
      say("ws-detached", String(room.detached));
      say("ws-names", room.names && room.names.length ? "Here: " + room.names.join(", ") : "");
      var total = byId("ws-poll-total");
      if (total && total.getAttribute("data-n") !== String(room.answers)) { refreshPoll(false); }
    });
    source.addEventListener("open", function () {
      if (presenter) { say("ws-sync", "Connected to the room."); } else { showWhere(); }  // clears "reconnecting"
      if (!presenter && following) { catchUp(); }  // a stream that was down may have missed the newest state
    });
    source.onerror = function () {
      say(presenter ? "ws-sync" : "ws-where", "Connection to the workshop lost; reconnecting…");
      if (source.readyState !== EventSource.CLOSED) { return; }  // the browser reconnects by itself
      // the server refused the stream: an ended workshop stays ended; anything else, try again
      fetch(base + "/state", { cache: "no-store" }).then(function (r) {
        if (r.status === 410 || r.status === 404) { ended(); } else { setTimeout(connect, 2000); }
      }, function () { setTimeout(connect, 2000); });
    };
  }

  // the workshop is over: the page stays, a scene to explore on one's own
  function ended() {
    following = false;
    bar.classList.add("ended");
    var mode = byId("ws-mode");
    if (mode) { mode.innerHTML = "<strong>The workshop has ended.</strong><span class=\"ws-more\"> This scene stays open to explore.</span>"; }
    ["ws-follow", "ws-detach"].forEach(function (id) { var b = byId(id); if (b) { b.hidden = true; } });
    say(presenter ? "ws-sync" : "ws-where", presenter ? "The workshop has ended." : "");
    say("ws-count", "The workshop has ended: the room's pages keep their scene to explore alone.");
    document.body.classList.add("ws-ended");
  }

  // -- polls --------------------------------------------------------------------------------
  function swapPoll(html, reveal) {
    var old = byId("ws-poll");
    if (!old || !html) { return; }
    var holder = document.createElement("div");
    holder.innerHTML = html.trim();
    var fresh = holder.querySelector("#ws-poll");
    if (!fresh) { return; }
    old.replaceWith(fresh);
    pollState();
    if (reveal && !fresh.hidden) {
      var rect = fresh.getBoundingClientRect();
      if (rect.top > window.innerHeight || rect.bottom < 0) { fresh.scrollIntoView({ block: "nearest" }); }
    }
  }
  // while a poll waits for its reveal, what would give its answer away stays hidden (app.css)
  function pollState() {
    var poll = byId("ws-poll");
    var status = poll ? poll.getAttribute("data-status") : "none";
    document.body.classList.toggle("ws-poll-open", status === "open" || status === "closed");
  }
  // a following participant keeps the poll in view only while it waits for their answer
  function pollNeedsMe() {
    var poll = byId("ws-poll");
    return !!(poll && !poll.hidden && poll.querySelector("form[data-ws-answer]") &&
      !poll.querySelector("form[data-ws-answer] [aria-current]"));
  }
  function refreshPoll(reveal) {
    var headers = presenter ? { "X-Presenter-Token": token } : {};
    fetch(base + "/poll", { headers: headers, cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) { swapPoll(html, reveal); });
  }
  function pollAction(action) {
    fetch(base + "/poll", { method: "POST", headers: controlHeaders(false), body: "action=" + action })
      .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t }; }); })
      .then(function (res) {
        if (res.ok) { swapPoll(res.text, false); }
        else { say("ws-sync", action === "open" ? "This beat has no question to ask." : "The poll did not change."); }
      });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) { return; }
    if (form.matches("[data-ws-answer]")) {
      event.preventDefault();
      var choice = event.submitter && event.submitter.value;
      if (!choice) { return; }
      fetch(base + "/answer", { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "choice=" + encodeURIComponent(choice) })
        .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t, status: r.status }; }); })
        .then(function (res) {
          if (res.ok) { swapPoll(res.text, false); var b = byId("ws-choice-" + choice); if (b) { b.focus(); } }
          else { say("ws-where", res.status === 429 ? "Too many answers: wait a moment." : "The poll is closed."); }
        });
    } else if (form.matches("[data-ws-poll]")) {
      event.preventDefault();
      pollAction(form.getAttribute("data-ws-poll"));
    } else if (form.id === "ws-scene-pick") {
      event.preventDefault();
      var pick = form.querySelector("select");
      if (pick) { publish("/scenes/" + pick.value, function () { window.location.assign(ownPage); }); }
    } else if (form.id === "ws-name-form") {
      event.preventDefault();
      fetch(form.action, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(new FormData(form)).toString() })
        .then(function (r) { say("ws-name-saved", r.ok ? "Saved." : "Could not save it."); });
    }
  });

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) { return; }
    var act = target.closest("button[data-ws-poll]");
    if (act) { pollAction(act.getAttribute("data-ws-poll")); return; }
    if (target.closest("#ws-detach")) { detach(); return; }
    if (target.closest("#ws-follow")) { follow(); return; }
    if (target.closest("#ws-join-toggle")) { toggleJoinCard(); return; }
    if (target.closest("#ws-notes-toggle")) { toggleNotes(); return; }
    if (target.closest("#ws-end") && window.confirm("End the workshop for everyone? Its code stops working.")) {
      fetch(base + "/end", { method: "POST", headers: controlHeaders(false), body: "" })
        .then(function (r) { if (r.ok) { ended(); } else { say("ws-sync", "The workshop could not be ended."); } });
      return;
    }
    if (target.closest("#ws-join-big-open")) { toggleBigJoin(); return; }
    var away = presenter && target.closest("a[href^='/']:not([href^='/scenes/']):not([href^='/w/'])");
    if (away && !event.defaultPrevented && !away.target) {
      // the course map or the glossary must not take the presenter's page away from the room
      event.preventDefault();
      window.open(away.getAttribute("href"), "_blank", "noopener");
      return;
    }
    // a link to another scene page (not an htmx step link) would leave the workshop page
    var link = target.closest("a[href^='/scenes/']");
    if (!link || event.defaultPrevented || event.metaKey || event.ctrlKey || event.shiftKey || link.target) { return; }
    event.preventDefault();
    var href = link.getAttribute("href");
    if (presenter) {
      publish(href, function () { window.location.assign(ownPage); });
    } else {
      detach();
      window.location.assign(base + "?at=" + encodeURIComponent(href));
    }
  });

  // -- keys: F follows again; the presenter's clicker keys ------------------------------------
  // typing text: letters are the text's. A slider, a menu or a button that has focus after a
  // mouse click is not typing: a clicker's PageDown must step, not move the knob under it.
  function typing(el) {
    if (!(el instanceof Element)) { return false; }
    if (el.isContentEditable || el.closest("textarea")) { return true; }
    var input = el.closest("input");
    return !!input && !/^(range|checkbox|radio|button|submit)$/.test(input.type);
  }
  function press(ids) {
    if (document.querySelector(".htmx-request")) { return; }
    for (var i = 0; i < ids.length; i++) {
      var link = byId(ids[i]);
      if (link && link.tagName === "A") { link.click(); return; }
    }
  }
  // the presenter's choices for this workshop, kept across its scenes and reloads
  function remember(key, value) { try { window.localStorage.setItem("bk-ws-" + key + "-" + code, value); } catch (e) { /* private mode */ } }
  function recall(key) { try { return window.localStorage.getItem("bk-ws-" + key + "-" + code); } catch (e) { return null; } }
  function setJoinCard(show) {
    var card = byId("ws-join-card");
    var button = byId("ws-join-toggle");
    if (!card || !button) { return; }
    card.hidden = !show;
    bar.classList.toggle("compact", !show);
    button.textContent = show ? "Hide join card" : "Show join card";
    button.setAttribute("aria-expanded", show ? "true" : "false");
    measureBar();
  }
  function toggleJoinCard() {
    var card = byId("ws-join-card");
    if (!card) { return; }
    setJoinCard(card.hidden);
    remember("join", card.hidden ? "hidden" : "shown");
  }
  function setNotes(show) {
    document.body.classList.toggle("ws-notes-open", show);
    var button = byId("ws-notes-toggle");
    if (button) { button.setAttribute("aria-expanded", show ? "true" : "false"); }
  }
  function toggleNotes() {
    setNotes(!document.body.classList.contains("ws-notes-open"));
    if (document.body.classList.contains("ws-poll-open")) { say("ws-sync", "The notes stay hidden until the poll's answer is revealed."); }
  }
  // the notes belong on the presenter's own screen, not the projected one
  function openNotesWindow() {
    var link = byId("ws-notes-window");
    if (link) { window.open(link.getAttribute("href"), link.getAttribute("target") || "_blank"); }
  }
  if (presenter) {
    if (recall("join") === "hidden") { setJoinCard(false); }
  }
  function toggleBigJoin() {
    var big = byId("ws-join-big");
    if (big) { big.hidden = !big.hidden; }
  }
  var CLICKER = { PageDown: 1, PageUp: 1, b: 1, B: 1, ".": 1, q: 1, Q: 1, j: 1, J: 1, s: 1, S: 1,
    r: 1, R: 1, h: 1, H: 1, Escape: 1 };
  function closeOverlays() {
    var open = false;
    ["ws-join-big", "ws-blank"].forEach(function (id) {
      var el = byId(id);
      if (el && !el.hidden) { el.hidden = true; open = true; }
    });
    return open;
  }
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) { return; }
    var key = event.key;
    if (!presenter) {
      if ((key === "f" || key === "F") && !following && !(event.target instanceof Element && event.target.closest("select"))) {
        event.preventDefault();
        follow();
      }
      return;
    }
    if (!CLICKER[key]) { return; }
    if (key.length === 1 && event.target instanceof Element && event.target.closest("select")) { return; }  // type-to-pick
    event.preventDefault();  // before the focused slider or menu takes the key
    var focused = document.activeElement;
    if (focused && focused !== document.body && focused.matches("input, select")) { focused.blur(); }
    // a clicker's first press behind the big join screen (or the blank) only takes it away
    if ((key === "PageDown" || key === "PageUp" || key === "Escape") && closeOverlays()) { return; }
    if (key === "PageDown") { press(["step-forward", "caption-next"]); }
    else if (key === "PageUp") { press(["step-back", "beat-prev"]); }
    else if (key === "s" || key === "S") { openNotesWindow(); }
    else if (key === "r" || key === "R") { if (byId("ws-poll-reveal")) { pollAction("reveal"); } }
    else if (key === "h" || key === "H") { if (byId("ws-poll-hide")) { pollAction("hide"); } }
    else if (key === "b" || key === "B") { press(["beat-next"]); }
    else if (key === "q" || key === "Q") { pollAction("open"); }
    else if (key === "j" || key === "J") { toggleBigJoin(); }
    else if (key === ".") {
      var blank = byId("ws-blank");
      if (blank) { blank.hidden = !blank.hidden; }
    }
  }, true);

  // the drawing keeps the Step bar clear of it: the CSS sizes it to the screen minus this bar
  function measureBar() {
    document.documentElement.style.setProperty("--ws-bar-h", bar.offsetHeight + "px");
  }
  window.addEventListener("resize", measureBar);
  measureBar();

  pollState();
  connect();
  showWhere();
})();
