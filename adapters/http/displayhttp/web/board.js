// The waiting-room board. It reads one queue run through its display token:
// an EventSource on /display/<token>/events sends the whole board after
// every change ("board" events), so the page never polls. A newly called
// turn is highlighted and announced with a short chime. When the stream
// drops, EventSource reconnects by itself; when the server refuses it (the
// token was revoked), the page asks /display/<token>/board why and says so.
(function () {
  "use strict";

  var token = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop() || "");
  var base = "/display/" + encodeURIComponent(token);
  var $ = function (id) { return document.getElementById(id); };
  var source = null;
  var retryDelay = 1000;
  var retryTimer = null;
  var stopped = false;
  var highlightTimer = null;
  var painted = false; // the board shows the server's first paint
  var i18n = window.qmsI18n;
  var t = i18n.t;

  // Exposed for people debugging a screen (and for the browser test).
  window.qmsBoard = { boards: 0, lastTrigger: null, state: "connecting", page: 0, pages: 1, rotateMs: 6000 };

  // More calls than fit: the rows are shown a page at a time, the page
  // turning every rotateMs, so every call is on screen within one cycle
  // and none falls off the bottom. The newest calls come first, so a new
  // call shows on the first page, and a new board starts from it.
  var rotateTimer = null;
  function paginate(keepPage) {
    var rows = Array.prototype.slice.call($("calling-rows").children);
    var body = $("calling-body");
    rows.forEach(function (r) { r.hidden = false; });
    function fitting() {
      var bottom = body.getBoundingClientRect().bottom;
      var n = 0;
      while (n < rows.length && rows[n].getBoundingClientRect().bottom <= bottom + 0.5) { n++; }
      return n;
    }
    document.body.classList.remove("many");
    var perPage = fitting();
    if (perPage < rows.length) {
      document.body.classList.add("many"); // shrink first, then rotate
      perPage = fitting();
    }
    perPage = Math.max(1, perPage);
    var pages = Math.max(1, Math.ceil(rows.length / perPage));
    var page = keepPage ? window.qmsBoard.page % pages : 0;
    window.qmsBoard.pages = pages;
    window.qmsBoard.perPage = perPage;
    showPage(rows, page, perPage, pages);
    clearInterval(rotateTimer);
    rotateTimer = pages > 1 ? setInterval(nextPage, window.qmsBoard.rotateMs) : null;
  }
  function showPage(rows, page, perPage, pages) {
    window.qmsBoard.page = page;
    rows.forEach(function (r, i) { r.hidden = Math.floor(i / perPage) !== page; });
    var ind = $("calling-pages");
    ind.hidden = pages < 2;
    text(ind, (page + 1) + "/" + pages);
  }
  function nextPage() {
    var b = window.qmsBoard;
    showPage(Array.prototype.slice.call($("calling-rows").children), (b.page + 1) % b.pages, b.perPage, b.pages);
  }
  window.qmsBoard.nextPage = nextPage;
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { paginate(true); }, 150);
  });

  function setState(state) {
    window.qmsBoard.state = state;
    document.body.dataset.state = state;
    var c = $("connection");
    var label = { live: "conn.live", connecting: "conn.connecting", reconnecting: "conn.reconnecting" }[state] || "conn.stopped";
    // A board painted from the server's first paint is not "connecting"
    // to anyone looking at it: the label waits for news worth telling.
    c.textContent = state === "connecting" && painted ? "" : t(label);
    c.className = "connection " + (state === "live" ? "live" : state === "connecting" ? "" : "down");
  }

  function text(el, s) { el.textContent = s == null ? "" : String(s); return el; }
  // A station's cell: "Window 1", never "Window" on one line and "1" on
  // the next. The last short word and the one before it go in a span that
  // does not wrap; the text keeps its ordinary spaces.
  function stationCell(tag, label, cls) {
    var el = cell(tag, "", cls);
    var m = /(\S+\s+\S{1,4})$/.exec(String(label));
    if (!m) { text(el, label); return el; }
    var keep = cell("span", m[1], "nowrap");
    el.replaceChildren(document.createTextNode(String(label).slice(0, m.index)), keep);
    return el;
  }
  function cell(tag, s, cls) { var el = document.createElement(tag); text(el, s); if (cls) { el.className = cls; } return el; }

  function render(board, trigger) {
    window.qmsBoard.boards++;
    text($("queue-name"), board.queue.name);
    text($("queue-subtitle"), board.queue.subtitle || "");
    document.title = t("board.title", { queue: board.queue.name });

    var head = $("calling-head");
    head.replaceChildren(cell("th", t("board.turn")), cell("th", t("board.goTo")));
    board.columns.forEach(function (c) { head.appendChild(cell("th", c.label)); });
    if (board.showSecurity) { head.appendChild(cell("th", t("board.security"))); }

    var rows = $("calling-rows");
    rows.replaceChildren();
    var fresh = trigger && trigger.event === "turn.called" ? trigger.turnId : null;
    board.calling.forEach(function (t) {
      var tr = document.createElement("tr");
      tr.dataset.turnId = t.turnId;
      tr.appendChild(cell("td", t.displayCode, "code"));
      tr.appendChild(t.station ? stationCell("td", t.station.label, "station") : cell("td", i18n.t("board.counter"), "station"));
      board.columns.forEach(function (c) { tr.appendChild(cell("td", t.columns[c.key] || "")); });
      if (board.showSecurity) { tr.appendChild(cell("td", t.securityCode || "", "security")); }
      if (t.turnId === fresh) { tr.className = "fresh"; }
      rows.appendChild(tr);
    });
    // The idle board fills the screen with what a waiting room needs
    // (how many wait, who is next, "please wait"); a few calls get large
    // rows; many get smaller ones, then rotate (paginate).
    document.body.classList.toggle("idle", board.calling.length === 0);
    document.body.classList.toggle("few", board.calling.length > 0 && board.calling.length <= 3);
    $("calling-empty").hidden = board.calling.length > 0;
    $("calling").hidden = board.calling.length === 0;

    var recent = $("recent");
    recent.replaceChildren();
    board.recent.forEach(function (t) {
      var li = document.createElement("li");
      li.appendChild(cell("span", t.displayCode, "code"));
      li.appendChild(stationCell("span", t.station ? t.station.label : "", "station"));
      recent.appendChild(li);
    });

    recent.parentNode.hidden = board.recent.length === 0;

    var run = board.run;
    var banner = $("banner");
    text(banner, run.status !== "OPEN" ? t("board.closed") : run.intakeOpen ? "" : t("board.intakeClosed"));
    banner.className = "banner" + (run.status !== "OPEN" ? " closed" : "");
    banner.hidden = run.status === "OPEN" && run.intakeOpen;
    nextUp = nextUpOf(board);
    speaking = speakingOf(board);
    renderWaiting(board.waiting);
    paginate(!fresh);

    if (fresh) {
      window.qmsBoard.lastTrigger = trigger;
      chime();
      var station = stationOf(board, trigger.turnId);
      speak(trigger.displayCode || "", station);
      // Screen readers hear each call once, in the board's language
      // (the table itself is not a live region: it is redrawn whole).
      announce(t("board.called", { code: trigger.displayCode || "", station: station || t("board.counter") }));
      clearTimeout(highlightTimer);
      highlightTimer = setTimeout(function () {
        var el = rows.querySelector("tr.fresh");
        if (el) { el.className = ""; }
      }, 8000);
    }
  }

  // How many wait and about how long: "5 waiting · usual wait 4–9 min"
  // (the range when the queue has one, else the estimate).
  var nextUp = 0;
  var speaking = true;
  function renderWaiting(w) {
    var el = $("waiting");
    el.replaceChildren();
    if (!w) { return; }
    if (w.count === 0) { el.appendChild(cell("span", t("board.noneWaiting"))); return; }
    // "{count} waiting": the number in bold, wherever the language puts it.
    var parts = t("board.waiting", { count: "\u0000" }).split("\u0000");
    el.appendChild(document.createTextNode(parts[0]));
    el.appendChild(cell("strong", i18n.number(w.count)));
    el.appendChild(document.createTextNode(parts[1] || ""));
    // Only a measured range is shown: the queue's own service times, at
    // least three of them (the server sends waitRange then, not before).
    // Until then the board says in words that it has no figure yet, rather
    // than a default dressed up as "usual", or one fast service's average.
    var wait = null;
    if (w.waitRange) {
      wait = w.waitRange.p90Minutes < 1 ? t("wait.soon") :
        t("wait.range", { wait: w.waitRange.p50Minutes === w.waitRange.p90Minutes ? i18n.number(w.waitRange.p90Minutes) :
          i18n.number(w.waitRange.p50Minutes) + "–" + i18n.number(w.waitRange.p90Minutes) });
    }
    if (wait !== null) {
      el.appendChild(document.createTextNode(" · " + t("board.usualWait") + " "));
      el.appendChild(cell("strong", wait, "wait"));
    } else {
      el.appendChild(cell("span", t("board.waitUnknown"), "wait-unknown"));
    }
    // Over the queue's wait target (sla.maxWaitMinutes): how many, in
    // words with a warning sign, and the next-up codes among them marked
    // the same way (a sign and words for screen readers, never colour
    // alone), so staff and the waiting room see who has waited too long.
    var minutes = w.maxWaitMinutes == null ? "" : i18n.number(w.maxWaitMinutes);
    if (w.overSla > 0) {
      var over = cell("span", "", "over-sla");
      over.appendChild(cell("span", " · ", "sep"));
      var mark = cell("span", "", "sla-mark");
      mark.appendChild(cell("span", "\u26a0", "sign"));
      mark.appendChild(document.createTextNode(" " + t("board.overSla", { count: i18n.number(w.overSla), minutes: minutes })));
      over.appendChild(mark);
      el.appendChild(over);
    }
    var late = w.nextOverSla || [];
    var codes = (w.next || []).slice(0, nextUp);
    if (codes.length > 0) {
      var span = cell("span", "", "next");
      span.appendChild(cell("span", " · ", "sep"));
      span.appendChild(document.createTextNode(t("board.next") + " "));
      codes.forEach(function (c, i) {
        if (i > 0) { span.appendChild(document.createTextNode(" ")); }
        var code = cell("strong", c, "code");
        if (late.indexOf(c) >= 0) {
          code.className = "code over";
          code.title = t("board.overSlaMark", { minutes: minutes });
          code.insertBefore(cell("span", "\u26a0", "sign"), code.firstChild);
          code.appendChild(cell("span", " (" + t("board.overSlaMark", { minutes: minutes }) + ")", "sr-only"));
        }
        span.appendChild(code);
      });
      el.appendChild(span);
    }
    window.qmsBoard.overSla = { count: w.overSla == null ? null : w.overSla, next: late.filter(function (c) { return codes.indexOf(c) >= 0; }) };
  }
  // How many next-up codes to list (at most 5) and whether to speak: the
  // token's options (board.options), unless the board's link overrides
  // them for this screen ("?next=3", "?speak=off" or "?speak=on").
  var params = new URLSearchParams(location.search);
  function nextUpOf(board) {
    var q = params.get("next");
    var n = q !== null ? parseInt(q, 10) : (board.options ? board.options.nextUp : 0);
    return Math.max(0, Math.min(5, n || 0));
  }
  function speakingOf(board) {
    var q = params.get("speak");
    if (q !== null) { return !/^(off|0|false|no)$/i.test(q); }
    return !board.options || board.options.speech !== false;
  }

  // Each call is also spoken, after the chime, in the board's language:
  // the code letter by letter ("A 0 0 4, Window 3"), so it is heard the
  // same in any language. The token's speech option; "?speak=off" on the board's link
  // switches it off for that screen (speakingOf).
  window.qmsBoard.spoken = [];
  function stationOf(board, turnId) {
    for (var i = 0; i < board.calling.length; i++) {
      if (board.calling[i].turnId === turnId && board.calling[i].station) { return board.calling[i].station.label; }
    }
    return "";
  }
  function speak(code, station) {
    if (!speaking || !code || !("speechSynthesis" in window)) { return; }
    var words = code.split("").join(" ") + (station ? ", " + station : "");
    window.qmsBoard.spoken.push(words);
    try {
      var u = new SpeechSynthesisUtterance(words);
      u.lang = i18n.lang;
      u.rate = 0.9;
      setTimeout(function () { window.speechSynthesis.speak(u); }, 800);
    } catch (e) { /* no voice on this device: the chime and highlight remain */ }
  }

  // A two-note chime synthesised with WebAudio: nothing to download.
  var audio = null;
  function chime() {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      if (audio.state === "suspended") {
        audio.resume();
        $("sound").hidden = false; // browsers keep sound off until someone clicks
      }
      [[880, 0], [660, 0.28]].forEach(function (n) {
        var osc = audio.createOscillator();
        var gain = audio.createGain();
        var t0 = audio.currentTime + n[1];
        osc.type = "sine";
        osc.frequency.value = n[0];
        gain.gain.setValueAtTime(0.0001, t0);
        gain.gain.exponentialRampToValueAtTime(0.35, t0 + 0.02);
        gain.gain.exponentialRampToValueAtTime(0.0001, t0 + 0.5);
        osc.connect(gain).connect(audio.destination);
        osc.start(t0);
        osc.stop(t0 + 0.55);
      });
    } catch (e) { /* no audio on this device: the highlight remains */ }
  }
  $("sound").addEventListener("click", function () {
    audio = audio || new (window.AudioContext || window.webkitAudioContext)();
    audio.resume();
    $("sound").hidden = true;
  });

  function showMessage(title, body, state) {
    stopped = true;
    if (source) { source.close(); }
    clearTimeout(retryTimer);
    text($("message-title"), title);
    text($("message-text"), body);
    $("message").hidden = false;
    setState(state);
  }

  function explain(code) {
    if (code === "DISPLAY_TOKEN_REVOKED") {
      showMessage(t("board.revokedTitle"), t("board.revokedText"), "revoked");
      return true;
    }
    if (code === "INVALID_DISPLAY_TOKEN") {
      showMessage(t("board.invalidTitle"), t("board.invalidText"), "invalid");
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

  // The stream was refused: find out whether the token is the reason.
  function diagnose() {
    fetch(base + "/board", { cache: "no-store" }).then(function (r) {
      if (r.ok) { reconnectLater(); return null; }
      return r.json().then(function (body) {
        if (!explain(body && body.error && body.error.code)) { reconnectLater(); }
      });
    }).catch(reconnectLater);
  }

  function connect() {
    if (stopped) { return; }
    if (source) { source.close(); }
    if (window.qmsBoard.state !== "reconnecting") { setState("connecting"); }
    source = new EventSource(base + "/events");
    source.onopen = function () { retryDelay = 1000; setState("live"); };
    source.addEventListener("board", function (e) {
      var msg = JSON.parse(e.data);
      // The token's language, unless the link names one (?lang=).
      i18n.use(msg.board.options && msg.board.options.language).then(function (changed) {
        if (changed) { setState(window.qmsBoard.state); }
        render(msg.board, msg.trigger);
      });
    });
    source.addEventListener("revoked", function () { explain("DISPLAY_TOKEN_REVOKED"); });
    ["shutdown", "overflow", "failure"].forEach(function (name) {
      source.addEventListener(name, function () {
        source.close();
        reconnectLater();
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

  function tick() {
    text($("clock"), i18n.time(new Date()));
  }
  // The screen-reader announcement of a call (aria-live="assertive").
  function announce(s) {
    var el = $("announce");
    text(el, "");
    setTimeout(function () { text(el, s); }, 50);
  }
  window.qmsBoard.announce = function () { return $("announce").textContent; };
  i18n.load(i18n.lang).catch(function () { return i18n.load("en"); }).then(function () {
    tick();
    setInterval(tick, 1000);
    setState("connecting");
    // The server's first paint: the board as it was when the page was
    // served, shown at once; the stream then keeps it current.
    var first = i18n.initial && i18n.initial.board;
    if (first) {
      painted = true;
      render(first, null);
      setState("connecting");
    }
    connect();
  });
})();
