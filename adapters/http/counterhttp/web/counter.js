// The staff console of one queue, opened by a counter link. It reads the
// line through an EventSource on /counter/<token>/events (the whole console
// after every change; reconnects by itself) and acts through
// POST /counter/<token>/press, one idempotency key per press: a double
// click, or a retry after a lost answer, never does a thing twice. Every
// button has a one-key shortcut shown on it; "?" lists them.
(function () {
  "use strict";

  var i18n = window.qmsI18n;
  var t = i18n.t;
  var token = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop() || "");
  var base = "/counter/" + encodeURIComponent(token);
  var $ = function (id) { return document.getElementById(id); };

  var con = null;        // the last console read
  var station = null;    // the station picked ("" for none)
  var selected = null;   // the turn picked in the line, else the station's
  var pressing = false;  // a press is on its way
  var armed = null;      // the turn a first Del armed for cancelling
  var lastPress = null;  // the last button pressed, its turn, and when
  var pressingAct = null; // the button of the press on its way
  var queued = null;      // a button pressed while another's press was on its way
  var source = null;
  var retryDelay = 1000;
  var retryTimer = null;
  var stopped = false;
  var langReady = null;

  // Exposed for the browser tests and for whoever debugs a counter.
  var probe = window.qmsCounter = {
    state: "connecting", consoles: 0, stale: 0, presses: [], ignored: 0, lastError: null, announced: "", focus: null
  };

  // The shortcuts, in the order the help lists them.
  var keys = [
    ["N", "next"], ["W", "walk-in"], ["L", "call"], ["R", "recall"], ["A", "arrive"], ["S", "start"],
    ["C", "complete"], ["X", "no-show"], ["H", "hold"], ["U", "release"], ["P", "priority"], ["F", "forward"],
    ["O", "reopen"], ["Del", "cancel"]
  ];
  var actLabel = {
    "next": "counter.act.next", "walk-in": "counter.act.walkIn", "call": "counter.act.call", "recall": "counter.act.recall",
    "arrive": "counter.act.arrive", "start": "counter.act.start", "complete": "counter.act.complete", "no-show": "counter.act.noShow",
    "hold": "counter.act.hold", "release": "counter.act.release", "priority": "counter.act.priority", "forward": "counter.act.forward",
    "reopen": "counter.act.reopen", "cancel": "counter.act.cancel"
  };

  function text(el, s) { el.textContent = s == null ? "" : String(s); return el; }
  function el(tag, cls, s) { var e = document.createElement(tag); if (cls) { e.className = cls; } if (s != null) { text(e, s); } return e; }

  function newKey() {
    var a = new Uint8Array(16);
    crypto.getRandomValues(a);
    return Array.prototype.map.call(a, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  function setState(s) {
    probe.state = s;
    document.body.dataset.state = s;
    var c = $("connection");
    text(c, t({ live: "conn.live", connecting: "conn.connecting", reconnecting: "conn.reconnecting" }[s] || "conn.stopped"));
    c.className = "connection " + (s === "live" ? "live" : s === "reconnecting" ? "down" : "");
  }

  function announce(s) {
    // Cleared first, so the same words twice are announced twice.
    var a = $("announce");
    text(a, "");
    probe.announced = s;
    setTimeout(function () { text(a, s); }, 30);
  }

  function showError(s, code) {
    probe.lastError = { code: code || null, text: s, at: Date.now() };
    text($("error"), s).hidden = false;
  }
  function clearError() { $("error").hidden = true; }

  function message(titleKey, textKey) {
    stopped = true;
    if (source) { source.close(); }
    clearTimeout(retryTimer);
    setState("stopped");
    probe.state = "revoked";
    text($("message-title"), t(titleKey));
    text($("message-text"), t(textKey));
    $("message").hidden = false;
    $("console").hidden = true;
  }

  // --- reading the console ---------------------------------------------

  function connect() {
    if (stopped) { return; }
    source = new EventSource(base + "/events");
    source.addEventListener("console", function (e) {
      retryDelay = 1000;
      setState("live");
      apply(JSON.parse(e.data).console);
    });
    source.addEventListener("revoked", function () { message("counter.revokedTitle", "counter.revokedText"); });
    ["shutdown", "overflow", "failure"].forEach(function (name) {
      source.addEventListener(name, function () { source.close(); reconnect(); });
    });
    source.onerror = function () { source.close(); reconnect(); };
  }

  function reconnect() {
    if (stopped) { return; }
    setState("reconnecting");
    clearTimeout(retryTimer);
    retryTimer = setTimeout(function () {
      // Ask first whether the link still stands: EventSource does not say
      // why it failed.
      fetch(base + "/state", { cache: "no-store" }).then(function (r) {
        if (r.status === 410) { return message("counter.revokedTitle", "counter.revokedText"); }
        if (r.status === 404) { return message("counter.invalidTitle", "counter.invalidText"); }
        connect();
      }, connect);
    }, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 15000);
  }

  function refresh() {
    return fetch(base + "/state", { cache: "no-store" }).then(function (r) {
      if (r.status === 410) { message("counter.revokedTitle", "counter.revokedText"); return null; }
      return r.ok ? r.json().then(apply) : null;
    }, function () { return null; });
  }

  function apply(c) {
    // A press's answer and the stream's frames race each other: a read
    // older than the one shown is dropped, so a late answer never puts
    // back a line that has moved on since.
    if (con && Date.parse(c.generatedAt) < Date.parse(con.generatedAt)) { probe.stale++; return false; }
    probe.consoles++;
    var first = !con;
    con = c;
    if (first) {
      langReady = i18n.use(c.link.language).then(function () { render(); });
      return;
    }
    render();
  }

  // --- the line ----------------------------------------------------------

  function groups() {
    var g = [
      ["called", "counter.group.called", con.called],
      ["inService", "counter.group.inService", con.inService],
      ["waiting", "counter.group.waiting", con.waiting],
      ["held", "counter.group.held", con.held],
      ["waitlisted", "counter.group.waitlisted", con.waitlisted]
    ];
    if (con.queue.flow.allowReopen) { g.push(["finished", "counter.group.finished", con.finished]); }
    if (!con.queue.flow.trackService) { g.splice(1, 1); }
    return g;
  }

  function allRows() {
    var out = [];
    groups().forEach(function (g) { g[2].forEach(function (r) { out.push(r); }); });
    return out;
  }

  function find(id) {
    if (!con || !id) { return null; }
    var rows = allRows();
    for (var i = 0; i < rows.length; i++) { if (rows[i].id === id) { return rows[i]; } }
    return null;
  }

  function stationRow() {
    if (!con) { return null; }
    var rows = con.called.concat(con.inService);
    var mine = rows.filter(function (r) { return station ? r.station && r.station.id === station : !r.station; });
    mine.sort(function (a, b) { return (b.calledAt || "").localeCompare(a.calledAt || ""); });
    return mine[0] || null;
  }

  function focused() { return find(selected) || stationRow(); }

  function minutes(from) {
    if (!from) { return null; }
    return Math.max(0, Math.floor((Date.now() - new Date(from).getTime()) / 60000));
  }
  function ago(from) {
    var m = minutes(from);
    if (m == null) { return ""; }
    return m < 1 ? t("counter.lessThanMinute") : t("counter.minutes", { n: i18n.number(m) });
  }

  function overSLA(r) {
    var sla = con.queue.sla || {};
    // Past the target once it has been waited (served) that long: the
    // board's and turn.sla_breached's rule, so the marks agree.
    function past(from, m) { return !!from && Date.now() - new Date(from).getTime() >= m * 60000; }
    if (r.status === "WAITING" && sla.maxWaitMinutes != null) { return past(r.createdAt, sla.maxWaitMinutes); }
    if (r.status === "IN_SERVICE" && sla.maxServiceMinutes != null) { return past(r.startedAt, sla.maxServiceMinutes); }
    return false;
  }

  function statusName(s) { return t("counter.status." + s); }
  function prioName(p) { return t("counter.priority." + p); }

  function answersText(r) {
    if (!r.formResponse) { return ""; }
    var parts = [];
    (con.queue.questions || []).forEach(function (q) {
      if (r.formResponse[q.id] != null && r.formResponse[q.id] !== "") { parts.push((q.label || q.id) + ": " + r.formResponse[q.id]); }
    });
    return parts.join(" · ");
  }

  function renderLists() {
    var box = $("lists");
    box.textContent = "";
    groups().forEach(function (g) {
      var key = g[0], rows = g[2];
      var h = el("h3");
      var titleId = "group-" + key;
      h.id = titleId;
      h.appendChild(el("span", null, t(g[1])));
      h.appendChild(el("span", null, i18n.number(rows.length)));
      box.appendChild(h);
      if (!rows.length) { box.appendChild(el("p", "none", t("counter.none"))); return; }
      var table = el("table", "turns");
      table.setAttribute("aria-labelledby", titleId);
      // A grid: its rows are picked (aria-selected), with the arrows.
      table.setAttribute("role", "grid");
      table.setAttribute("aria-readonly", "true");
      table.dataset.group = key;
      var head = el("tr");
      var cols = key === "waiting" ? ["counter.col.position", "counter.col.turn", "counter.col.priority", "counter.col.waited", "counter.col.people"]
        : key === "finished" ? ["counter.col.turn", "counter.col.status", "counter.col.finished"]
        : key === "called" || key === "inService" ? ["counter.col.turn", "counter.col.station", "counter.col.since", "counter.col.people"]
        : ["counter.col.turn", "counter.col.priority", "counter.col.waited", "counter.col.people"];
      if (con.link.showDetails && key !== "finished") { cols.push("counter.col.answers"); }
      cols.forEach(function (c) { var th = el("th", null, t(c)); th.scope = "col"; head.appendChild(th); });
      var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
      var body = el("tbody");
      rows.forEach(function (r) {
        var tr = el("tr", "row");
        tr.dataset.turnId = r.id;
        tr.tabIndex = -1;
        tr.setAttribute("aria-selected", String(selected === r.id));
        var cells = [];
        if (key === "waiting") {
          cells = [r.position != null ? i18n.number(r.position) : "", r.displayCode, r.priority, ago(r.createdAt), i18n.number(r.peopleCount)];
        } else if (key === "finished") {
          cells = [r.displayCode, statusName(r.status), ago(r.finishedAt)];
        } else if (key === "called" || key === "inService") {
          cells = [r.displayCode, r.station ? r.station.label : t("counter.noStation"), ago(key === "called" ? r.calledAt : r.startedAt), i18n.number(r.peopleCount)];
        } else {
          cells = [r.displayCode, r.priority, ago(r.createdAt), i18n.number(r.peopleCount)];
        }
        if (con.link.showDetails && key !== "finished") { cells.push(answersText(r) + (r.phone ? " · " + r.phone : "")); }
        cells.forEach(function (c, i) {
          var td = el("td");
          var col = cols[i];
          if (col === "counter.col.turn") {
            td.className = "code-cell";
            text(td, c);
            if (overSLA(r)) {
              var s = el("span", "sla", "SLA");
              s.title = t("counter.overSla");
              s.setAttribute("aria-label", t("counter.overSla"));
              td.appendChild(document.createTextNode(" "));
              td.appendChild(s);
            }
          } else if (col === "counter.col.priority") {
            td.appendChild(el("span", "prio " + c, prioName(c)));
          } else if (col === "counter.col.answers") {
            td.className = "answers";
            text(td, c);
          } else {
            text(td, c);
          }
          tr.appendChild(td);
        });
        tr.addEventListener("click", function () { select(r.id); });
        body.appendChild(tr);
      });
      table.appendChild(body);
      box.appendChild(table);
    });
  }

  function select(id, focusRow) {
    selected = id;
    armed = null;
    Array.prototype.forEach.call(document.querySelectorAll("tr.row"), function (tr) {
      var on = tr.dataset.turnId === id;
      tr.setAttribute("aria-selected", String(on));
      if (on && focusRow) { tr.focus(); tr.scrollIntoView({ block: "nearest" }); }
    });
    renderFocus();
  }

  // --- the desk ----------------------------------------------------------

  // allowed is whether an action applies to a turn in its status (the
  // state machine of docs/turns.md); shown is whether the queue's flow has
  // the button at all.
  function shown(act) {
    var f = con.queue.flow;
    if (act === "start") { return f.trackService; }
    if (act === "reopen") { return f.allowReopen; }
    if (act === "forward") { return con.queue.transferEnabled && con.forward.length > 0; }
    return true;
  }
  function allowed(act, r) {
    if (act === "next" || act === "walk-in") { return !!con.run && con.run.status === "OPEN"; }
    if (!r) { return false; }
    var s = r.status, f = con.queue.flow;
    switch (act) {
      case "call": return s === "WAITING" || s === "HELD";
      case "recall": return s === "CALLED";
      case "arrive": return (["WAITLISTED", "WAITING", "HELD", "CALLED"].indexOf(s) >= 0 && !r.arrivedAt) || (s === "NO_SHOW" && con.queue.tolerance.allowReentry);
      case "start": return s === "CALLED";
      case "complete": return s === "IN_SERVICE" || (s === "CALLED" && !f.trackService);
      case "no-show": return s === "CALLED";
      case "hold": return s === "WAITING" || s === "CALLED";
      case "release": return s === "HELD" || s === "WAITLISTED";
      case "priority": return s === "WAITING" || s === "HELD" || s === "WAITLISTED";
      case "forward": return ["WAITING", "HELD", "CALLED", "IN_SERVICE"].indexOf(s) >= 0;
      case "reopen": return s === "COMPLETED" || s === "NO_SHOW" || s === "CANCELLED";
      case "cancel": return ["WAITLISTED", "WAITING", "HELD", "CALLED", "IN_SERVICE"].indexOf(s) >= 0;
    }
    return false;
  }

  function renderFocus() {
    if (!con) { return; }
    var r = focused();
    probe.focus = r ? r.id : null;
    $("focus-empty").hidden = !!r;
    $("focus-turn").hidden = !r;
    if (r) {
      text($("focus-code"), r.displayCode);
      text($("focus-status"), statusName(r.status));
      $("focus-sla").hidden = !overSLA(r);
      $("focus-sla").setAttribute("aria-label", t("counter.overSla"));
      var meta = [];
      if (r.station) { meta.push(r.station.label); }
      meta.push(prioName(r.priority));
      meta.push(i18n.plural("counter.peopleCount", r.peopleCount, { n: i18n.number(r.peopleCount) }));
      meta.push(t("counter.waitedSince", { time: i18n.time(new Date(r.createdAt)) }));
      if (r.callCount > 1) { meta.push(t("counter.calls", { n: i18n.number(r.callCount) })); }
      if (r.arrivedAt) { meta.push(t("counter.arrived")); }
      text($("focus-meta"), meta.join(" · "));
      var dl = $("focus-details");
      dl.textContent = "";
      if (con.link.showDetails) {
        if (r.phone) { dl.appendChild(el("dt", null, t("counter.phone"))); dl.appendChild(el("dd", null, r.phone)); }
        (con.queue.questions || []).forEach(function (q) {
          var v = r.formResponse && r.formResponse[q.id];
          if (v != null && v !== "") { dl.appendChild(el("dt", null, q.label || q.id)); dl.appendChild(el("dd", null, v)); }
        });
      }
    }
    Array.prototype.forEach.call(document.querySelectorAll("button[data-act]"), function (b) {
      var act = b.dataset.act;
      b.hidden = !shown(act);
      var ok = allowed(act, act === "next" || act === "walk-in" ? null : r);
      b.setAttribute("aria-disabled", String(!ok));
    });
    text($("focus-hint"), selected && r ? t("counter.hintSelected") : "");
    var next = con.waiting[0];
    $("next-up").hidden = !!r || !next;
    if (!r && next) {
      var nu = $("next-up");
      nu.textContent = "";
      nu.appendChild(document.createTextNode(t("counter.nextUp") + " "));
      nu.appendChild(el("strong", null, next.displayCode));
      nu.appendChild(document.createTextNode(" · " + prioName(next.priority) + " · " + ago(next.createdAt)));
    }
    loadHistory(r);
  }

  // The focused turn's history at the counters: read again when the turn
  // or what the console knows of it changes.
  var historyOf = null;
  function loadHistory(r) {
    var sig = r ? r.id + "/" + r.status + "/" + r.callCount + "/" + r.priority : null;
    if (sig === historyOf) { return; }
    historyOf = sig;
    $("history").hidden = true;
    if (!r) { return; }
    fetch(base + "/turns/" + encodeURIComponent(r.id) + "/presses", { cache: "no-store" }).then(function (res) {
      return res.ok ? res.json() : null;
    }).then(function (data) {
      if (!data || historyOf !== sig) { return; }
      var ol = $("history-list");
      ol.textContent = "";
      data.data.forEach(function (p) {
        var st = p.stationId ? (con.stations.filter(function (s) { return s.id === p.stationId; })[0] || {}).label : null;
        var who = p.linkId === con.link.id ? t("counter.thisCounter") : t("counter.otherCounter");
        ol.appendChild(el("li", null, i18n.time(new Date(p.at)) + " · " + t(actLabel[p.action] || p.action) + (st ? " · " + st : "") + " · " + who));
      });
      $("history").hidden = !data.data.length;
    }, function () {});
  }

  function renderStations() {
    var sel = $("station");
    var saved = localStorage.getItem("qms.counter.station." + con.link.id);
    var want = station != null ? station : saved;
    sel.textContent = "";
    var opts = con.stations.slice();
    if (!opts.length) {
      var o = el("option", null, t("counter.noStation"));
      o.value = "";
      sel.appendChild(o);
      station = "";
    } else {
      var seen = false;
      opts.forEach(function (s) {
        var busy = s.turnId ? find(s.turnId) : null;
        var o = el("option", null, busy ? t("counter.stationBusy", { station: s.label, code: busy.displayCode }) : s.label);
        o.value = s.id;
        seen = seen || s.id === want;
        sel.appendChild(o);
      });
      station = seen ? want : opts[0].id;
    }
    sel.value = station;
    probe.station = station;
  }

  function render() {
    if (!con) { return; }
    $("console").hidden = false;
    document.title = t("counter.title", { queue: con.queue.name });
    text($("queue"), con.queue.name);
    text($("run"), !con.run ? "" : con.run.status !== "OPEN" ? t("counter.runClosed") : !con.run.intakeOpen ? t("counter.intakeClosed") : "");
    text($("counts"), t("counter.waitingCount", { n: i18n.number(con.waiting.length) }) + " · " +
      i18n.plural("counter.peopleCount", con.people, { n: i18n.number(con.people) }));
    // The connection's words, in the console's language once it is known.
    if (probe.state === "live" || probe.state === "reconnecting") { setState(probe.state); }
    text($("link-label"), con.link.label || "");
    text($("updated"), t("counter.updated", { time: i18n.time(new Date(con.generatedAt)) }));
    if (selected && !find(selected)) { selected = null; }
    renderStations();
    renderLists();
    renderFocus();
    renderHelpRequests();
  }

  // The customers asking for help on their ticket page (the queue's help,
  // console.helpRequests), the one waiting longest first. Each has the
  // queue's quick replies as buttons; an answer goes to the customer's
  // page and takes the request off every console. A request that arrives
  // while the console is open is announced.
  var helpSeen = null;   // the request ids shown so far (null: none drawn yet)
  var answering = {};    // request id -> true while its answer is on its way
  function renderHelpRequests() {
    var list = con.helpRequests || [];
    var replies = (con.queue.help && con.queue.help.quickReplies) || [];
    var box = $("help-requests");
    box.hidden = !list.length;
    // Drawn again on every frame: the focus stays on the button it was on.
    var act = document.activeElement;
    var keep = act && act.dataset && act.dataset.helpId ? { id: act.dataset.helpId, reply: act.dataset.reply } : null;
    var ul = $("help-list");
    ul.textContent = "";
    var seen = {};
    var refocus = null;
    list.forEach(function (h) {
      seen[h.id] = true;
      if (helpSeen && !helpSeen[h.id]) { announce(t("counter.helpAsked", { code: h.displayCode })); }
      var li = el("li");
      li.dataset.helpId = h.id;
      li.dataset.turnId = h.turnId;
      var who = el("p", "who");
      who.appendChild(el("span", "help-code", h.displayCode));
      who.appendChild(el("span", "since", t("counter.helpSince", { time: ago(h.requestedAt) })));
      li.appendChild(who);
      if (!replies.length) {
        li.appendChild(el("p", "hint", t("counter.helpNoReplies")));
      } else {
        var group = el("div", "replies");
        group.setAttribute("role", "group");
        group.setAttribute("aria-label", t("counter.helpAnswer", { code: h.displayCode }));
        replies.forEach(function (r) {
          var b = el("button", "reply", r);
          b.type = "button";
          b.dataset.helpId = h.id;
          b.dataset.reply = r;
          if (answering[h.id]) { b.setAttribute("aria-busy", "true"); }
          b.addEventListener("click", function () { answerHelp(h, r); });
          group.appendChild(b);
          if (keep && keep.id === h.id && keep.reply === r) { refocus = b; }
        });
        li.appendChild(group);
      }
      ul.appendChild(li);
    });
    // The request whose button had the focus was answered (here or at
    // another counter): a keyboard user goes on from the next request's
    // first reply, else from "Call next", never from nowhere.
    if (keep) { (refocus || ul.querySelector("button.reply") || $("btn-next")).focus(); }
    helpSeen = seen;
    probe.helpRequests = list.map(function (h) { return h.displayCode; });
  }

  function answerHelp(h, reply) {
    if (answering[h.id]) { probe.ignored++; return; }
    answering[h.id] = true;
    clearError();
    renderHelpRequests();
    fetch(base + "/help-requests/" + encodeURIComponent(h.id) + "/answer", {
      method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ reply: reply })
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, status: r.status, data: data }; },
        function () { return { ok: false, status: r.status, data: {} }; });
    }, function () { return { ok: false, status: 0, data: {} }; }).then(function (res) {
      delete answering[h.id];
      if (res.ok) {
        if (apply(res.data.console) === false && con) { render(); }
        announce(t("counter.helpAnswered", { code: h.displayCode, reply: reply }));
        return;
      }
      var err = (res.data && res.data.error) || {};
      if (err.code === "COUNTER_LINK_REVOKED") { message("counter.revokedTitle", "counter.revokedText"); return; }
      // Answered meanwhile at another counter (or gone): say so, and show
      // the list as it is now.
      var msg = err.code === "HELP_ALREADY_ANSWERED" || err.code === "NOT_FOUND" ? t("counter.err.helpAnswered", { code: h.displayCode })
        : err.code === "RATE_LIMITED" ? t("counter.err.slowDown")
        : res.status === 0 ? t("counter.err.network") : err.message || t("counter.err.network");
      showError(msg, err.code || "HTTP_" + res.status);
      announce(msg);
      return refresh();
    }).then(function () { if (con) { renderHelpRequests(); } });
  }

  // --- acting ------------------------------------------------------------

  function buttonOf(act) { return document.querySelector('button[data-act="' + act + '"]'); }

  function trigger(act) {
    if (!con) { return; }
    if (pressing) {
      // Another button while a press is on its way (N then C at once):
      // it runs when the answer is in, on the turn as it is then. The same
      // button again is the double click the key already guards.
      if (act === pressingAct) { probe.ignored++; } else { queued = act; }
      return;
    }
    var b = buttonOf(act);
    if (!b || b.hidden) { return; }
    if (b.getAttribute("aria-disabled") === "true") {
      var r = focused();
      announce(r ? t("counter.notFor", { action: t(actLabel[act]), code: r.displayCode, status: statusName(r.status) }) : t("counter.noTurnPicked"));
      return;
    }
    if (act === "walk-in") { return openWalkIn(); }
    if (act === "priority") { return openPriority(); }
    if (act === "forward") { return openForward(); }
    var r2 = focused();
    // A second press of the same button on the same turn within half a
    // second is the same intent (a double click, a bouncing key), even
    // when the first press was already answered.
    var now = performance.now();
    var target = act === "next" ? null : r2.id;
    if (lastPress && lastPress.act === act && lastPress.turn === target && now - lastPress.at < 500) {
      probe.ignored++;
      return;
    }
    lastPress = { act: act, turn: target, at: now };
    if (act === "cancel") {
      if (armed !== r2.id) {
        armed = r2.id;
        text($("focus-hint"), t("counter.confirmCancel", { code: r2.displayCode }));
        announce(t("counter.confirmCancel", { code: r2.displayCode }));
        setTimeout(function () { if (armed === r2.id) { armed = null; renderFocus(); } }, 4000);
        return;
      }
      armed = null;
    }
    var body = { action: act === "recall" ? "call" : act };
    if (act !== "next") { body.turnId = r2.id; }
    if ((act === "next" || act === "call" || act === "recall") && station) { body.stationId = station; }
    pressingAct = act;
    press(b, body);
  }

  function press(button, body, onDone) {
    if (pressing) { probe.ignored++; return; }
    pressing = true;
    clearError();
    body.key = newKey();
    if (body.stationId == null && station) { body.stationId = station; }
    var busy = Array.prototype.slice.call(document.querySelectorAll("button[data-act]"));
    busy.forEach(function (b) { b.setAttribute("aria-busy", "true"); });
    var started = performance.now();
    var record = { action: body.action, key: body.key, status: null, ms: null, at: Date.now() };
    probe.presses.push(record);
    send(body, 0).then(function (res) {
      record.status = res.status;
      record.ms = Math.round(performance.now() - started);
      if (res.ok) {
        var r = res.data.result;
        if (body.action === "next" || body.action === "call") { selected = null; }
        if (body.action === "walk-in" && r.turn) { selected = r.turn.id; }
        // Drawn again even when the answer was older than a frame the
        // stream brought meanwhile: the pick above must show.
        if (apply(res.data.console) === false && con) { render(); }
        if (r.turn) { announce(done(body.action, r.turn)); }
        if (onDone) { onDone(null); }
        return;
      }
      return explain(res, body).then(function (msg) { if (onDone) { onDone(res, msg); } });
    }).then(function () {
      pressing = false;
      pressingAct = null;
      busy.forEach(function (b) { b.removeAttribute("aria-busy"); });
      var next = queued;
      queued = null;
      if (next) { trigger(next); }
    });
  }

  // send posts a press; a lost answer (the network failed, not the server)
  // is sent again once with the same key: the server does it at most once.
  function send(body, attempt) {
    return fetch(base + "/press", {
      method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, status: r.status, data: data }; },
        function () { return { ok: false, status: r.status, data: {} }; });
    }, function () {
      if (attempt < 1) {
        return new Promise(function (res) { setTimeout(res, 600); }).then(function () { return send(body, attempt + 1); });
      }
      return { ok: false, status: 0, data: {} };
    });
  }

  function done(action, turn) {
    var where = turn.station ? turn.station.label : t("counter.noStation");
    if (action === "next" || action === "call") {
      return turn.status === "IN_SERVICE" ? t("counter.done.serving", { code: turn.displayCode, station: where })
        : t("counter.done.called", { code: turn.displayCode, station: where });
    }
    if (action === "walk-in") { return t("counter.done.walkIn", { code: turn.displayCode }); }
    return t("counter.done.changed", { code: turn.displayCode, status: statusName(turn.status) });
  }

  // explain says in plain words why a press was refused, after re-reading
  // the line: most refusals mean another counter just moved the turn.
  function explain(res, body) {
    var err = (res.data && res.data.error) || {};
    var code = err.code || (res.status === 0 ? "NETWORK" : "HTTP_" + res.status);
    if (code === "COUNTER_LINK_REVOKED") { message("counter.revokedTitle", "counter.revokedText"); return Promise.resolve(null); }
    var before = body.turnId ? find(body.turnId) : null;
    return refresh().then(function () {
      var msg;
      var now = body.turnId ? find(body.turnId) : null;
      var label = before ? before.displayCode : "";
      switch (code) {
        case "INVALID_TRANSITION":
        case "NOT_FOUND":
        case "REENTRY_NOT_ALLOWED":
          msg = now ? t("counter.err.moved", { code: now.displayCode, status: statusName(now.status), station: now.station ? now.station.label : t("counter.noStation") })
            : t("counter.err.gone", { code: label });
          break;
        case "STATION_BUSY":
          msg = body.action === "next" ? t("counter.err.stationBusy") : t("counter.err.stationTaken");
          break;
        case "NO_WAITING_TURNS": msg = t("counter.err.noneWaiting"); break;
        case "QUEUE_CLOSED": msg = t("counter.runClosed"); break;
        case "STATION_REQUIRED": msg = t("counter.err.pickStation"); break;
        case "STATION_NOT_ALLOWED": msg = t("counter.err.notYourStation"); break;
        case "RATE_LIMITED": msg = t("counter.err.slowDown"); break;
        case "NETWORK": msg = t("counter.err.network"); break;
        default: msg = err.message || t("counter.err.network");
      }
      if (body.action === "walk-in" && code === "VALIDATION_ERROR") { return msg; }
      showError(msg, code);
      announce(msg);
      return msg;
    });
  }

  // --- dialogs -------------------------------------------------------------

  function openDialog(d) {
    if (!d.open) { d.showModal(); }
  }
  Array.prototype.forEach.call(document.querySelectorAll("dialog [data-close]"), function (b) {
    b.addEventListener("click", function () { b.closest("dialog").close(); });
  });

  function choices(box, items, onPick) {
    box.textContent = "";
    items.forEach(function (it, i) {
      var b = el("button");
      b.type = "button";
      b.appendChild(el("kbd", null, String(i + 1)));
      b.appendChild(document.createTextNode(" " + it.label));
      b.setAttribute("aria-keyshortcuts", String(i + 1));
      b.dataset.index = String(i + 1);
      b.addEventListener("click", function () { onPick(it); });
      box.appendChild(b);
    });
  }

  function openPriority() {
    var r = focused();
    var d = $("dlg-priority");
    choices($("priority-options"), con.queue.priorities.map(function (p) { return { value: p, label: prioName(p) + (p === r.priority ? " ✓" : "") }; }), function (it) {
      d.close();
      press(buttonOf("priority"), { action: "priority", turnId: r.id, priority: it.value });
    });
    openDialog(d);
    d.querySelector(".choices button").focus();
  }

  function openForward() {
    var r = focused();
    var d = $("dlg-forward");
    choices($("forward-options"), con.forward.map(function (f) { return { value: f.linkId, label: f.queueName }; }), function (it) {
      d.close();
      press(buttonOf("forward"), { action: "forward", turnId: r.id, linkId: it.value });
    });
    openDialog(d);
    d.querySelector(".choices button").focus();
  }

  function openWalkIn() {
    var d = $("dlg-walk-in");
    $("walk-in-people").value = "1";
    $("walk-in-phone").value = "";
    $("walk-in-phone-row").hidden = !con.queue.whatsappCapture;
    $("walk-in-error").hidden = true;
    var box = $("walk-in-questions");
    box.textContent = "";
    (con.queue.questions || []).forEach(function (q, i) {
      var label = el("label", "field");
      var span = el("span", null, q.label || q.id);
      if (q.required) { var req = el("span", "req", " *"); req.setAttribute("aria-hidden", "true"); span.appendChild(req); }
      label.appendChild(span);
      var input;
      if (q.type === "choice") {
        input = el("select");
        var empty = el("option", null, "—");
        empty.value = "";
        input.appendChild(empty);
        (q.options || []).forEach(function (o) {
          var lbl = typeof o === "string" ? o : o.label;
          var opt = el("option", null, lbl);
          opt.value = lbl;
          input.appendChild(opt);
        });
      } else {
        input = el("input");
        input.type = "text";
        input.autocomplete = "off";
      }
      input.name = "q-" + i;
      input.dataset.questionId = q.id;
      if (q.required) { input.required = true; input.setAttribute("aria-required", "true"); }
      label.appendChild(input);
      box.appendChild(label);
    });
    openDialog(d);
    $("walk-in-people").focus();
    $("walk-in-people").select();
  }

  $("walk-in-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var walkIn = { peopleCount: parseInt($("walk-in-people").value, 10) || 1, formResponse: {} };
    var phone = $("walk-in-phone").value.trim();
    if (con.queue.whatsappCapture && phone) { walkIn.phone = phone; }
    Array.prototype.forEach.call($("walk-in-questions").querySelectorAll("[data-question-id]"), function (inp) {
      if (inp.value !== "") { walkIn.formResponse[inp.dataset.questionId] = inp.value; }
    });
    var d = $("dlg-walk-in");
    press($("walk-in-submit"), { action: "walk-in", walkIn: walkIn }, function (res, msg) {
      if (!res) { d.close(); $("btn-walk-in").focus(); return; }
      var err = (res.data && res.data.error) || {};
      var fields = (err.details && err.details.fields) || [];
      var lines = fields.map(function (f) { return f.field + ": " + f.message; });
      text($("walk-in-error"), [msg || err.message].concat(lines).join(" — ")).hidden = false;
    });
  });

  function openHelp() {
    var tb = $("help-table").querySelector("tbody");
    tb.textContent = "";
    keys.concat([["↑ ↓", "counter.key.move"], ["Esc", "counter.key.back"], ["T", "counter.key.station"], ["?", "counter.shortcuts"]]).forEach(function (k) {
      var tr = el("tr");
      var td = el("td");
      td.appendChild(el("kbd", null, k[0]));
      tr.appendChild(td);
      tr.appendChild(el("td", null, t(actLabel[k[1]] || k[1])));
      tb.appendChild(tr);
    });
    openDialog($("dlg-help"));
    $("dlg-help").querySelector("[data-close]").focus();
  }

  // --- keyboard ------------------------------------------------------------

  var shortcut = {
    n: "next", w: "walk-in", l: "call", r: "recall", a: "arrive", s: "start", c: "complete", x: "no-show",
    h: "hold", u: "release", p: "priority", f: "forward", o: "reopen", Delete: "cancel"
  };

  function moveSelection(step) {
    var rows = Array.prototype.map.call(document.querySelectorAll("tr.row"), function (tr) { return tr.dataset.turnId; });
    if (!rows.length) { return; }
    var i = rows.indexOf(selected);
    i = i < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.max(0, Math.min(rows.length - 1, i + step));
    select(rows[i], true);
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
    var open = document.querySelector("dialog[open]");
    if (open) {
      // In a choice dialog, 1-9 pick.
      if (/^[1-9]$/.test(e.key) && open.querySelector(".choices")) {
        var b = open.querySelector('.choices button[data-index="' + e.key + '"]');
        if (b) { e.preventDefault(); b.click(); }
      }
      return;
    }
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || (tag === "SELECT" && e.key !== "Escape")) { return; }
    if (e.key === "?") { e.preventDefault(); openHelp(); return; }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") { e.preventDefault(); moveSelection(e.key === "ArrowDown" ? 1 : -1); return; }
    if (e.key === "Escape") { armed = null; select(null); return; }
    if (e.key === "t" || e.key === "T") { e.preventDefault(); $("station").focus(); return; }
    var act = shortcut[e.key] || shortcut[String(e.key).toLowerCase()];
    if (!act || e.repeat) { return; }
    e.preventDefault();
    trigger(act);
  });

  Array.prototype.forEach.call(document.querySelectorAll("button[data-act]"), function (b) {
    b.addEventListener("click", function () { trigger(b.dataset.act); });
  });
  $("help").addEventListener("click", openHelp);
  $("station").addEventListener("change", function () {
    station = $("station").value;
    probe.station = station;
    if (con) { localStorage.setItem("qms.counter.station." + con.link.id, station); }
    selected = null;
    renderFocus();
  });

  // The times waited move on without any event.
  setInterval(function () { if (con && probe.state === "live") { renderLists(); renderFocus(); renderHelpRequests(); } }, 20000);

  i18n.load(i18n.lang).then(function () { setState("connecting"); connect(); }, function () { connect(); });
})();
