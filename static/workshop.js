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
    var synced = d.requestConfig && d.requestConfig.headers && d.requestConfig.headers[SYNC];
    if (presenter && !synced) { publish(url); }
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
  function apply(url) {
    if (!url || url === sceneUrl) { return; }
    if (sceneOf(url) !== sceneOf(sceneUrl)) {  // another scene: its whole page
      window.location.assign(presenter ? window.location.pathname : base);
      return;
    }
    if (syncing) { pending = url; return; }
    syncing = true;
    var headers = {};
    headers[SYNC] = "1";
    var done = function () {
      syncing = false;
      if (pending) { var next = pending; pending = null; if (following || presenter) { apply(next); } }
    };
    window.htmx.ajax("GET", url, { source: "#diagram", swap: "none", headers: headers }).then(done, done);
  }

  var presenterAt = null;
  function showWhere() {
    if (presenter) { return; }
    say("ws-where", presenterAt && !following ? "The presenter is at " + presenterAt + "." : "");
  }
  function setMode(follow) {
    following = follow;
    var detachBtn = byId("ws-detach");
    var followBtn = byId("ws-follow");
    if (detachBtn) { detachBtn.hidden = !follow; }
    if (followBtn) { followBtn.hidden = follow; }
    var mode = byId("ws-mode");
    if (mode) {
      mode.innerHTML = follow
        ? "<strong>Following the presenter.</strong> Your screen moves when theirs does."
        : "<strong>Exploring on your own.</strong> The presenter goes on without you: press F or the button to catch up.";
    }
    showWhere();
    fetch(base + "/mode", { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "detached=" + (follow ? "0" : "1") }).catch(function () {});
  }
  function detach() { if (following) { setMode(false); } }
  function follow() {
    if (presenter) { return; }
    setMode(true);
    fetch(base + "/state", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (sceneOf(data.url) !== sceneOf(sceneUrl) || window.location.search) { window.location.assign(base); return; }
        apply(data.url);
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
      if (presenter || following) { apply(data.url); }
      showWhere();
    });
    source.addEventListener("poll", function (event) {
      var data = JSON.parse(event.data);
      lastSeq = Math.max(lastSeq, data.seq || 0);
      refreshPoll(!presenter && data.action !== "close");
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
    });
    source.onerror = function () {
      say(presenter ? "ws-sync" : "ws-where", "Connection to the workshop lost; reconnecting…");
      if (source.readyState === EventSource.CLOSED) { setTimeout(connect, 2000); }
    };
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
    if (reveal && !fresh.hidden) {
      var rect = fresh.getBoundingClientRect();
      if (rect.top > window.innerHeight || rect.bottom < 0) { fresh.scrollIntoView({ block: "nearest" }); }
    }
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
        if (res.ok) { swapPoll(res.text, true); } else { say("ws-sync", "The poll could not be " + action + "ed."); }
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
    // a link to another scene page (not an htmx step link) would leave the workshop page
    var link = target.closest("a[href^='/scenes/']");
    if (!link || event.defaultPrevented || event.metaKey || event.ctrlKey || event.shiftKey || link.target) { return; }
    event.preventDefault();
    var href = link.getAttribute("href");
    if (presenter) {
      publish(href, function () { window.location.assign(window.location.pathname); });
    } else {
      detach();
      window.location.assign(base + "?at=" + encodeURIComponent(href));
    }
  });

  // -- keys: F follows again; the presenter's clicker keys ------------------------------------
  function typing(el) {
    return el instanceof Element && (el.isContentEditable || !!el.closest("input, textarea, select"));
  }
  function press(id) {
    var link = byId(id);
    if (id === "step-forward" && (!link || link.tagName !== "A")) { link = byId("caption-next"); }
    if (link && link.tagName === "A" && !document.querySelector(".htmx-request")) { link.click(); }
  }
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) { return; }
    var key = event.key;
    if (!presenter) {
      if ((key === "f" || key === "F") && !following) { event.preventDefault(); follow(); }
      return;
    }
    if (key === "PageDown") { event.preventDefault(); press("step-forward"); }
    else if (key === "PageUp") { event.preventDefault(); press("step-back"); }
    else if (key === "b" || key === "B") { event.preventDefault(); press("beat-next"); }
    else if (key === ".") {
      event.preventDefault();
      var blank = byId("ws-blank");
      if (blank) { blank.hidden = !blank.hidden; }
    }
  });

  connect();
  showWhere();
})();
