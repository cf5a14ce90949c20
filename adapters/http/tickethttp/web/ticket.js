// The customer's ticket page. It reads one turn through its ticket link:
// an EventSource on /ticket/<token>/events sends the whole ticket after
// every change of the run (the line moving, the turn called, finished), so
// the page never polls. When the turn is called the page says where to go
// in large type, announces it to screen readers, vibrates and chimes where
// the browser allows, and flashes the title so a phone in a pocket or a
// background tab shows it. When the stream drops it says so plainly and
// reconnects by itself; when the link has expired or is unknown it says
// that instead.
(function () {
  "use strict";

  var i18n = window.qmsI18n;
  var t = i18n.t;
  var token = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop() || "");
  var base = "/ticket/" + encodeURIComponent(token);
  var $ = function (id) { return document.getElementById(id); };
  var source = null;
  var retryDelay = 1000;
  var retryTimer = null;
  var stopped = false;
  var last = null;
  var titleTimer = null;
  var baseTitle = document.title;

  // Exposed for people debugging a phone (and for the browser test).
  window.qmsTicket = { tickets: 0, state: "connecting", status: null, calledShownAt: null, alerts: [] };

  function text(el, s) { el.textContent = s == null ? "" : String(s); return el; }

  function setState(state) {
    window.qmsTicket.state = state;
    document.body.dataset.state = state;
    var c = $("connection");
    var label = { live: "conn.live", connecting: "conn.connecting", reconnecting: "conn.reconnecting" }[state] || "conn.stopped";
    text(c, t(label));
    c.className = "connection " + (state === "live" ? "live" : state === "reconnecting" ? "down" : "");
  }

  // Only a measured range (three or more of the queue's own service
  // times) is a figure; before that the page says so in words, never a
  // default dressed up as an estimate.
  function waitText(tk) {
    if (tk.waitRange) {
      var r = tk.waitRange;
      if (r.p90Minutes < 1) { return t("wait.soon"); } // "under 1 min", never "0 min"
      return t("wait.range", { wait: r.p50Minutes === r.p90Minutes ? i18n.number(r.p90Minutes) : i18n.number(r.p50Minutes) + "–" + i18n.number(r.p90Minutes) });
    }
    return t("ticket.waitUnknown");
  }
  // "Go to Window 1", never "Window" on one line and "1" on the next: the
  // station's last word and the one before it go in a span that does not
  // wrap (the text itself keeps its ordinary spaces, for screen readers
  // and copy).
  function showWhere(el, tk) {
    var s = where(tk);
    var m = tk.station ? /(\S+\s+\S{1,4})$/.exec(s) : null;
    if (!m) { text(el, s); return; }
    var keep = document.createElement("span");
    keep.className = "nowrap";
    keep.textContent = m[1];
    el.replaceChildren(document.createTextNode(s.slice(0, m.index)), keep);
  }

  function where(tk) { return tk.station ? t("ticket.goTo", { station: tk.station }) : t("ticket.goToCounter"); }

  function render(tk) {
    window.qmsTicket.tickets++;
    window.qmsTicket.status = tk.status;
    $("ticket").hidden = false;
    text($("branch"), tk.branch.name);
    text($("queue"), tk.queue.name);
    text($("code"), tk.displayCode);
    text($("status"), t("ticket.status." + tk.status));
    baseTitle = t("ticket.title", { code: tk.displayCode });
    if (!titleTimer) { document.title = baseTitle; }

    var called = tk.status === "CALLED";
    $("called").hidden = !called;
    if (called) {
      showWhere($("called-where"), tk);
      text($("called-at"), tk.calledAt ? t("ticket.calledAt", { time: i18n.time(new Date(tk.calledAt)) }) : "");
    }

    var waiting = tk.ahead != null;
    $("line").hidden = !waiting;
    if (waiting) {
      text($("ahead"), tk.ahead === 0 ? t("ticket.aheadNone") : i18n.plural("ticket.ahead", tk.ahead, { count: i18n.number(tk.ahead) }));
      var w = waitText(tk);
      $("wait-row").hidden = w === null;
      text($("wait"), w || "");
    }

    var finished = !tk.canLeave;
    $("ended").hidden = !finished;
    if (finished) { text($("ended"), t("ticket.ended." + tk.status)); }
    $("run-closed").hidden = tk.runOpen || finished;
    $("expires").hidden = !tk.expiresAt;
    if (tk.expiresAt) { text($("expires"), t("ticket.expiresAt", { time: i18n.time(new Date(tk.expiresAt)) })); }
    renderHelp(tk.help);
    // The pickup security code (the queue's arrivalBoard.showSecurity).
    $("security").hidden = !tk.securityCode;
    text($("security-code"), tk.securityCode || "");
    $("leave").hidden = !tk.canLeave;
    $("alerts").hidden = finished;
    text($("updated"), t("ticket.updated", { time: i18n.time(new Date()) }));

    var was = last ? last.status : null;
    if (called && was !== "CALLED") {
      window.qmsTicket.calledShownAt = Date.now();
      alertCalled(tk, was !== null);
    } else if (!called) {
      stopFlashing();
      if (was !== null && was !== tk.status) { announce(t("ticket.status." + tk.status)); }
    }
    last = tk;
  }

  // Help (the queue's help.enabled): "I need help" while it applies, a
  // note while the request waits, staff's reply once it comes (announced
  // when it arrives live).
  var lastReply = null;
  function renderHelp(h) {
    $("help").hidden = !h;
    if (!h) { return; }
    var req = h.request;
    $("help-ask").hidden = !h.available;
    $("help-asked").hidden = !(req && req.status === "OPEN");
    var reply = req && req.reply ? req.reply : null;
    $("help-reply").hidden = reply === null;
    text($("help-reply-text"), reply || "");
    if (reply !== null && lastReply !== null && reply !== lastReply.value) { announce(t("ticket.helpReply") + ": " + reply); }
    lastReply = { value: reply };
    window.qmsTicket.helpReply = reply;
  }
  $("help-ask").addEventListener("click", function () {
    var btn = this;
    btn.disabled = true;
    $("help-error").hidden = true;
    fetch(base + "/help", { method: "POST", cache: "no-store" }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { throw new Error(body && body.error ? body.error.code : String(r.status)); }
        render(body);
      });
    }).catch(function () {
      text($("help-error"), t("ticket.helpFailed"));
      $("help-error").hidden = false;
    }).then(function () { btn.disabled = false; });
  });

  // The screen-reader announcement of a change (aria-live="assertive").
  function announce(s) {
    var el = $("announce");
    text(el, "");
    setTimeout(function () { text(el, s); }, 50);
  }

  // Called: say where to go (screen readers), vibrate and chime where the
  // browser allows (a phone usually needs a tap on the page first: the
  // "sound and vibration" button), and flash the title until the page is
  // looked at. The large yellow panel works without any of them.
  function alertCalled(tk, live) {
    var msg = t("ticket.flash") + " " + tk.displayCode + ". " + where(tk);
    announce(msg);
    window.qmsTicket.alerts.push(msg);
    if (!live) { return; } // opened while already called: no alarm
    document.body.classList.remove("flash");
    void document.body.offsetWidth; // restart the animation
    document.body.classList.add("flash");
    try { if (navigator.vibrate) { navigator.vibrate([400, 200, 400, 200, 400]); } } catch (e) { /* not allowed */ }
    chime();
    stopFlashing();
    var on = false;
    titleTimer = setInterval(function () {
      on = !on;
      document.title = on ? "🔔 " + t("ticket.flash") + " " + where(tk) : baseTitle;
    }, 1000);
    setTimeout(stopFlashing, 60000);
  }
  function stopFlashing() {
    if (titleTimer) { clearInterval(titleTimer); titleTimer = null; }
    document.title = baseTitle;
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && titleTimer) { setTimeout(stopFlashing, 5000); }
  });

  var audio = null;
  function chime() {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      if (audio.state === "suspended") { audio.resume(); }
      [[880, 0], [660, 0.28], [880, 0.56]].forEach(function (n) {
        var osc = audio.createOscillator();
        var gain = audio.createGain();
        var t0 = audio.currentTime + n[1];
        osc.type = "sine";
        osc.frequency.value = n[0];
        gain.gain.setValueAtTime(0.0001, t0);
        gain.gain.exponentialRampToValueAtTime(0.4, t0 + 0.02);
        gain.gain.exponentialRampToValueAtTime(0.0001, t0 + 0.5);
        osc.connect(gain).connect(audio.destination);
        osc.start(t0);
        osc.stop(t0 + 0.55);
      });
    } catch (e) { /* no audio on this device: the panel and title remain */ }
  }
  $("alerts").addEventListener("click", function () {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      audio.resume();
      if (navigator.vibrate) { navigator.vibrate(100); }
    } catch (e) { /* nothing to turn on */ }
    this.setAttribute("aria-pressed", "true");
    this.setAttribute("data-i18n", "ticket.alertsOn");
    text(this, t("ticket.alertsOn"));
  });

  $("leave").addEventListener("click", function () {
    if (!window.confirm(t("ticket.leaveConfirm"))) { return; }
    var btn = this;
    btn.disabled = true;
    $("leave-error").hidden = true;
    fetch(base + "/leave", { method: "POST", cache: "no-store" }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { throw new Error(body && body.error ? body.error.code : String(r.status)); }
        render(body);
      });
    }).catch(function () {
      text($("leave-error"), t("ticket.leaveFailed"));
      $("leave-error").hidden = false;
    }).then(function () { btn.disabled = false; });
  });

  function showMessage(title, body) {
    stopped = true;
    if (source) { source.close(); }
    clearTimeout(retryTimer);
    stopFlashing();
    $("ticket").hidden = true;
    text($("message-title"), title);
    text($("message-text"), body);
    $("message").hidden = false;
    document.title = title;
    setState("stopped");
  }

  function explain(code) {
    if (code === "TICKET_LINK_EXPIRED") {
      window.qmsTicket.state = "expired";
      showMessage(t("ticket.expiredTitle"), t("ticket.expiredText"));
      window.qmsTicket.state = "expired";
      return true;
    }
    if (code === "INVALID_TICKET_LINK") {
      showMessage(t("ticket.invalidTitle"), t("ticket.invalidText"));
      window.qmsTicket.state = "invalid";
      return true;
    }
    return false;
  }

  function reconnectLater() {
    if (stopped) { return; }
    setState("reconnecting");
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 30000);
  }

  // The stream was refused: find out whether the link is the reason.
  function diagnose() {
    fetch(base + "/state", { cache: "no-store" }).then(function (r) {
      if (r.ok) { reconnectLater(); return null; }
      return r.json().then(function (body) {
        if (!explain(body && body.error && body.error.code)) { reconnectLater(); }
      });
    }).catch(reconnectLater);
  }

  function onTicket(tk) {
    // The link's language, unless the address names one; re-render when
    // it changes.
    i18n.use(tk.language).then(function (changed) {
      if (changed && last) { last = null; }
      // The footer was labelled before the language was known ("Live"
      // on a Spanish page): label it again in the new one.
      if (changed) { setState(window.qmsTicket.state); }
      render(tk);
    });
  }

  function connect() {
    if (stopped) { return; }
    if (source) { source.close(); }
    if (window.qmsTicket.state !== "reconnecting") { setState("connecting"); }
    source = new EventSource(base + "/events");
    source.onopen = function () { retryDelay = 1000; setState("live"); };
    source.addEventListener("ticket", function (e) { onTicket(JSON.parse(e.data).ticket); });
    source.addEventListener("expired", function () { explain("TICKET_LINK_EXPIRED"); });
    ["shutdown", "overflow", "failure"].forEach(function (name) {
      source.addEventListener(name, function () {
        source.close();
        diagnose();
      });
    });
    source.onerror = function () {
      if (stopped) { return; }
      if (source.readyState === EventSource.CLOSED) {
        diagnose();
      } else {
        setState("reconnecting");
      }
    };
  }

  i18n.load(i18n.lang).catch(function () { return i18n.load("en"); }).then(function () {
    setState("connecting");
    connect();
  });
})();
