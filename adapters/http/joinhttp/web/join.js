// The join page. It reads the queue through its join link
// (/join/<token>/state): open or not and when it opens, how many wait and
// the wait range, the instructions, the questions, and what else the form
// asks (an access code, a phone, the device's location). "Take a number"
// posts the form once, under an idempotency key made for this form, so a
// double tap or a retry after a lost answer takes one turn; the page then
// goes to the new turn's live ticket page. A kiosk link instead shows the
// number and its QR code, then clears the form for the next person.
// Every refusal is said beside the field it is about, or above the button.
(function () {
  "use strict";

  var i18n = window.qmsI18n;
  var t = i18n.t;
  var token = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop() || "");
  var base = "/join/" + encodeURIComponent(token);
  var $ = function (id) { return document.getElementById(id); };
  var page = null;
  var key = newKey();
  var busy = null;
  var kioskTimer = null;
  // fieldOf maps an error's field path to the id of its element.
  var fieldOf = {};

  // Exposed for people debugging a phone (and for the browser test).
  window.qmsJoin = { state: "loading", page: null, joins: 0, last: null, submit: submit, kioskResetMs: 30000 };

  function text(el, s) { el.textContent = s == null ? "" : String(s); return el; }

  function newKey() {
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return ("0" + x.toString(16)).slice(-2); }).join("");
  }

  function setState(s) { window.qmsJoin.state = s; document.body.dataset.state = s; }

  function showMessage(title, body) {
    $("join").hidden = true;
    text($("message-title"), title);
    text($("message-text"), body);
    $("message").hidden = false;
  }

  function refused(code) {
    if (code === "JOIN_LINK_REVOKED") {
      setState("revoked");
      showMessage(t("join.revokedTitle"), t("join.revokedText"));
    } else {
      setState("invalid");
      showMessage(t("join.invalidTitle"), t("join.invalidText"));
    }
  }

  // waitText is the wait a newcomer faces, only from a measured range
  // (as the ticket page and the board say it): no invented figure.
  function waitText(w) {
    if (w.waitRange) {
      var r = w.waitRange;
      if (r.p90Minutes < 1) { return t("wait.soon"); } // "under 1 min", never "0 min"
      return t("wait.range", { wait: r.p50Minutes === r.p90Minutes ? i18n.number(r.p90Minutes) : i18n.number(r.p50Minutes) + "–" + i18n.number(r.p90Minutes) });
    }
    return null;
  }

  // opensText says when the queue opens, in the branch's time zone, with
  // the day when it is not today.
  function opensText(iso, zone) {
    var d = new Date(iso);
    var opts = { hour: "2-digit", minute: "2-digit", timeZone: zone || undefined };
    var day = new Intl.DateTimeFormat("en-CA", { timeZone: zone || undefined });
    if (day.format(d) !== day.format(new Date())) { opts.weekday = "long"; }
    try {
      return t("join.opensAt", { time: new Intl.DateTimeFormat(i18n.lang, opts).format(d) });
    } catch (e) {
      return t("join.opensAt", { time: i18n.time(d) });
    }
  }

  function renderStatus(p) {
    var st = $("open-state");
    st.className = "open-state " + (p.open ? "open" : "closed");
    text(st, p.open ? t("join.open") : t("join.closed." + (p.closed || "run_closed")));
    $("opens-at").hidden = !p.opensAt;
    if (p.opensAt) { text($("opens-at"), opensText(p.opensAt, p.timezone)); }
    var n = p.waiting.count;
    text($("waiting"), n === 0 ? t("join.noneWaiting") : i18n.plural("join.waiting", n, { count: i18n.number(n) }));
    var w = n > 0 ? waitText(p.waiting) : null;
    $("wait-row").hidden = w === null;
    text($("wait"), w || "");
    // People wait but no wait is measured yet: said plainly, no figure.
    $("wait-unknown").hidden = !(n > 0 && w === null);
    text($("wait-unknown"), t("join.waitUnknown"));
    $("full").hidden = !(p.full && p.waitlist && p.open);
    text($("full"), t("join.fullWaitlist"));
  }

  function field(id, labelText, required, input, hint) {
    var box = document.createElement("div");
    box.className = "field";
    box.id = "field-" + id;
    var lab = document.createElement("label");
    lab.htmlFor = id;
    text(lab, labelText);
    if (required) { appendRequired(lab); }
    box.appendChild(lab);
    input.id = id;
    box.appendChild(input);
    if (hint) { box.appendChild(hint); }
    box.appendChild(errorSlot(id, input));
    return box;
  }

  function appendRequired(el) {
    var s = document.createElement("span");
    s.className = "req";
    text(s, " *");
    s.setAttribute("aria-hidden", "true");
    el.appendChild(s);
  }

  function errorSlot(id, describes) {
    var e = document.createElement("p");
    e.className = "field-error";
    e.id = "err-" + id;
    e.setAttribute("role", "alert");
    e.hidden = true;
    if (describes) { describes.setAttribute("aria-describedby", e.id); }
    return e;
  }

  function renderQuestions(p) {
    var box = $("questions");
    box.textContent = "";
    fieldOf = { peopleCount: "peopleCount", phone: "phone", notifyWhatsapp: "phone", accessCode: "accessCode", location: "location" };
    p.questions.forEach(function (q, i) {
      var id = "q" + i;
      fieldOf["formResponse." + q.id] = id;
      if (q.type === "choice") {
        var fs = document.createElement("fieldset");
        fs.className = "field";
        fs.id = "field-" + id;
        var lg = document.createElement("legend");
        text(lg, q.label);
        if (q.required) { appendRequired(lg); }
        fs.appendChild(lg);
        var list = document.createElement("div");
        list.className = "choices";
        list.id = id;
        list.setAttribute("role", "radiogroup");
        if (q.required) { list.setAttribute("aria-required", "true"); }
        q.options.forEach(function (label, j) {
          var l = document.createElement("label");
          l.className = "choice";
          var r = document.createElement("input");
          r.type = "radio";
          r.name = id;
          r.value = label;
          r.id = id + "-" + j;
          l.appendChild(r);
          var s = document.createElement("span");
          text(s, label);
          l.appendChild(s);
          list.appendChild(l);
        });
        fs.appendChild(list);
        fs.appendChild(errorSlot(id, list));
        box.appendChild(fs);
      } else {
        var input = document.createElement("input");
        input.type = "text";
        input.name = id;
        input.maxLength = 500;
        input.autocomplete = "off";
        if (q.required) { input.required = true; input.setAttribute("aria-required", "true"); }
        box.appendChild(field(id, q.label, q.required, input));
      }
    });
  }

  // regionName is a country's name in the page's language ("ES" ->
  // "España"), the code where the browser cannot name it.
  function regionName(code) {
    try { return new Intl.DisplayNames([i18n.lang], { type: "region" }).of(code) || code; } catch (e) { return code; }
  }

  function render(p) {
    page = p;
    window.qmsJoin.page = p;
    $("join").hidden = false;
    text($("branch"), p.branch.name);
    text($("queue"), p.queue.name);
    $("subtitle").hidden = !p.queue.subtitle;
    text($("subtitle"), p.queue.subtitle || "");
    document.title = t("join.title", { queue: p.queue.name });
    renderStatus(p);
    $("instructions").hidden = !p.instructions;
    text($("instructions-text"), p.instructions || "");
    $("form").hidden = !p.open;
    if (!p.open) { return; }
    renderQuestions(p);
    $("field-accessCode").hidden = !p.accessCodeRequired;
    $("accessCode").required = !!p.accessCodeRequired;
    $("field-phone").hidden = !p.phone;
    if (p.phone) {
      text($("phone-hint"), p.phoneRegion ? t("join.phoneHintRegion", { region: regionName(p.phoneRegion) }) : t("join.phoneHint"));
    }
    $("peopleCount").max = p.maxPeople;
    $("field-location").hidden = !p.geofence;
    if (p.geofence) { text($("location-hint"), t("join.locationHint", { radius: i18n.number(p.geofence.radiusMeters) })); }
  }

  function load() {
    return fetch(base + "/state", { cache: "no-store" }).then(function (r) {
      return r.json().then(function (b) { return { ok: r.ok, body: b }; });
    }).then(function (res) {
      if (!res.ok) {
        var code = res.body && res.body.error && res.body.error.code;
        return i18n.load(i18n.lang).then(function () { refused(code); });
      }
      return i18n.use(res.body.language).then(function () {
        i18n.apply(document);
        applyLabels();
        render(res.body);
        setState(res.body.open ? "ready" : "closed");
      });
    }).catch(function () {
      setState("offline");
      showMessage(t("join.offlineTitle"), t("join.offlineText"));
    });
  }

  function applyLabels() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-i18n-label]"), function (el) {
      el.setAttribute("aria-label", t(el.getAttribute("data-i18n-label")));
    });
  }

  function clearErrors() {
    Array.prototype.forEach.call(document.querySelectorAll(".field-error"), function (e) { e.hidden = true; e.textContent = ""; });
    Array.prototype.forEach.call(document.querySelectorAll("[aria-invalid]"), function (e) { e.removeAttribute("aria-invalid"); });
    $("form-error").hidden = true;
  }

  function fieldError(path, message) {
    var id = fieldOf[path] || fieldOf[path.split(".")[0]];
    var slot = id && $("err-" + id);
    if (!slot) { return false; }
    text(slot, message);
    slot.hidden = false;
    var input = $(id);
    if (input) { input.setAttribute("aria-invalid", "true"); }
    return true;
  }

  function formError(message) {
    text($("form-error"), message);
    $("form-error").hidden = false;
  }

  // messageOf is the page's own words for a refusal, in its language,
  // the server's when it has none.
  function messageOf(f) { return errText(f.rule, null, f.message); }

  // errText is the catalogue's "join.err.<name>", else fallback.
  function errText(name, vars, fallback) {
    var s = t("join.err." + name, vars);
    return s === "join.err." + name ? fallback : s;
  }

  function showRefusal(status, body) {
    var e = (body && body.error) || {};
    var d = e.details || {};
    var first = null;
    if (e.code === "OUTSIDE_GEOFENCE") {
      fieldError("location", t("join.err.outside", { distance: i18n.number(d.distanceMeters), radius: i18n.number(d.radiusMeters) }));
      first = "location";
    } else if (e.code === "LOCATION_REQUIRED") {
      fieldError("location", t("join.err.locationRequired"));
      first = "location";
    } else if (d.fields && d.fields.length) {
      d.fields.forEach(function (f) {
        if (fieldError(f.path, messageOf(f))) { first = first || f.path; } else { formError(f.path + ": " + f.message); }
      });
    } else if (d.field === "accessCode" || /^ACCESS_CODE_/.test(e.code || "")) {
      fieldError("accessCode", errText(e.code, null, e.message));
      first = "accessCode";
    } else if (e.code === "JOIN_LINK_REVOKED" || e.code === "INVALID_JOIN_LINK") {
      refused(e.code);
      return;
    } else {
      formError(errText(e.code || "failed", { retry: d.retryAfter, limit: d.limit }, e.message || t("join.err.failed")));
    }
    var focus = first && $(fieldOf[first] || fieldOf[first.split(".")[0]]);
    if (focus && focus.focus) {
      focus.focus();
    } else if (focus) {
      var r = focus.querySelector("input");
      if (r) { r.focus(); }
    }
    text($("announce"), $("form-error").hidden ? t("join.err.fix") : $("form-error").textContent);
    if (status === 409 || status === 410) { load(); }
  }

  function collect() {
    var body = { idempotencyKey: key, formResponse: {} };
    page.questions.forEach(function (q, i) {
      var id = "q" + i;
      var v = "";
      if (q.type === "choice") {
        var c = document.querySelector('input[name="' + id + '"]:checked');
        v = c ? c.value : "";
      } else {
        v = $(id).value.trim();
      }
      if (v !== "") { body.formResponse[q.id] = v; }
    });
    var n = parseInt($("peopleCount").value, 10);
    body.peopleCount = isNaN(n) ? 0 : n;
    if (page.accessCodeRequired && $("accessCode").value.trim() !== "") { body.accessCode = $("accessCode").value.trim(); }
    if (page.phone) {
      var ph = $("phone").value.trim();
      if (ph !== "") { body.phone = ph; }
      if ($("notifyWhatsapp").checked) { body.notifyWhatsapp = true; }
      // The customer's messages go in the language they read here.
      if (body.phone) { body.language = i18n.lang; }
    }
    return body;
  }

  // checkLocally catches what needs no server (a required question left
  // blank), in the page's words; the server checks everything again.
  function checkLocally(body) {
    var ok = true;
    page.questions.forEach(function (q) {
      if (q.required && body.formResponse[q.id] == null) {
        fieldError("formResponse." + q.id, t("join.err.required"));
        ok = false;
      }
    });
    if (page.accessCodeRequired && !body.accessCode) { fieldError("accessCode", t("join.err.required")); ok = false; }
    if (body.peopleCount < 1 || body.peopleCount > page.maxPeople) {
      fieldError("peopleCount", t("join.err.people", { max: page.maxPeople }));
      ok = false;
    }
    return ok;
  }

  function position() {
    return new Promise(function (resolve, reject) {
      if (!navigator.geolocation) { reject({ code: 2 }); return; }
      navigator.geolocation.getCurrentPosition(function (pos) {
        resolve({ lat: pos.coords.latitude, lng: pos.coords.longitude, accuracy: pos.coords.accuracy });
      }, reject, { enableHighAccuracy: true, timeout: 15000, maximumAge: 0 }); // a fresh fix: the customer may have walked closer
    });
  }

  // submit takes the number. Taps while one is under way join it; the
  // test calls it twice at once through window.qmsJoin to prove the
  // server takes one turn for one key all the same.
  function submit(force) {
    if (busy && !force) { return busy; }
    clearErrors();
    var body = collect();
    if (!checkLocally(body)) {
      text($("announce"), t("join.err.fix"));
      return Promise.resolve(false);
    }
    var started = performance.now();
    $("take").disabled = true;
    text($("take"), t("join.taking"));
    var where = page.geofence ? position().then(function (loc) { body.location = loc; }, function (err) {
      throw { location: err && err.code === 1 ? "join.err.locationDenied" : "join.err.locationUnavailable" };
    }) : Promise.resolve();
    var p = where.then(function () {
      return fetch(base, { method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    }).then(function (r) {
      return r.json().then(function (b) { return { status: r.status, body: b }; });
    }).then(function (res) {
      window.qmsJoin.last = res;
      if (res.status !== 201) { showRefusal(res.status, res.body); return false; }
      window.qmsJoin.joins++;
      window.qmsJoin.tookMs = performance.now() - started;
      if (page.kiosk) { kioskDone(res.body); return true; }
      setState("joined");
      location.assign("/ticket/" + encodeURIComponent(res.body.ticket));
      return true;
    }).catch(function (err) {
      if (err && err.location) {
        fieldError("location", t(err.location));
        text($("announce"), t(err.location));
      } else {
        formError(t("join.err.offline"));
      }
      return false;
    }).then(function (ok) {
      busy = null;
      if (window.qmsJoin.state !== "joined") {
        $("take").disabled = false;
        text($("take"), t("join.take"));
      }
      return ok;
    });
    busy = p;
    return p;
  }

  function kioskDone(j) {
    setState("kiosk-done");
    $("form").hidden = true;
    $("instructions").hidden = true;
    $("status-card").hidden = true; // the line as it was: the number is what matters now
    $("kiosk-done").hidden = false;
    text($("kiosk-code"), j.displayCode);
    $("kiosk-qr").src = "/ticket/" + encodeURIComponent(j.ticket) + "/qr.svg";
    $("kiosk-qr").alt = t("join.kioskQr", { code: j.displayCode });
    text($("announce"), t("join.kioskAnnounce", { code: j.displayCode }));
    $("kiosk-next").focus();
    clearTimeout(kioskTimer);
    kioskTimer = setTimeout(kioskReset, window.qmsJoin.kioskResetMs);
  }

  // kioskReset forgets everything the last person typed and shows a
  // fresh form, under a new idempotency key.
  function kioskReset() {
    clearTimeout(kioskTimer);
    $("form").reset();
    clearErrors();
    $("kiosk-qr").removeAttribute("src");
    text($("kiosk-code"), "");
    $("kiosk-done").hidden = true;
    $("status-card").hidden = false;
    key = newKey();
    window.qmsJoin.resets = (window.qmsJoin.resets || 0) + 1;
    load().then(function () { window.scrollTo(0, 0); });
  }

  $("form").addEventListener("submit", function (ev) { ev.preventDefault(); submit(); });
  $("kiosk-next").addEventListener("click", kioskReset);
  $("people-less").addEventListener("click", function () {
    var el = $("peopleCount");
    el.value = Math.max(1, (parseInt(el.value, 10) || 1) - 1);
  });
  $("people-more").addEventListener("click", function () {
    var el = $("peopleCount");
    el.value = Math.min(page ? page.maxPeople : 20, (parseInt(el.value, 10) || 0) + 1);
  });
  load();
})();
