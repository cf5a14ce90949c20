// Auto-arrival for the ticket page (carpool.autoArriveOnGeofence). When
// the turn's queue marks arrival by location, the page says so and, with
// the customer's permission, watches the device's location while it is
// open; the first report inside the queue's radius marks the turn arrived
// through the API's own arrive, once, and the watch stops. Positions go
// to the server only to be measured: nothing of them is kept but the
// turn's arrivedAt.
(function () {
  "use strict";

  var i18n = window.qmsI18n;
  var t = i18n.t;
  var token = decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop() || "");
  var url = "/ticket/" + encodeURIComponent(token) + "/arrive";
  var watch = null;
  var lastSent = 0;
  var box = null;
  var note = null;
  var button = null;

  window.qmsArrive = { state: "idle", reports: 0, arrived: false };

  function post(loc) {
    return fetch(url, {
      method: "POST", cache: "no-store", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(loc ? { location: loc } : {})
    }).then(function (r) { return r.ok ? r.json() : null; });
  }

  function say(key, vars, state) {
    note.textContent = t(key, vars);
    window.qmsArrive.state = state;
  }

  function stop() {
    if (watch !== null) { navigator.geolocation.clearWatch(watch); watch = null; }
  }

  function arrived() {
    stop();
    window.qmsArrive.arrived = true;
    button.hidden = true;
    say("arrive.done", null, "arrived");
  }

  function report(pos) {
    var now = Date.now();
    if (now - lastSent < 10000 && window.qmsArrive.reports > 0) { return; }
    lastSent = now;
    window.qmsArrive.reports++;
    post({ lat: pos.coords.latitude, lng: pos.coords.longitude, accuracy: pos.coords.accuracy }).then(function (a) {
      if (!a) { return; }
      if (a.arrived) { arrived(); return; }
      if (a.distanceMeters != null) { say("arrive.away", { distance: i18n.number(a.distanceMeters), radius: i18n.number(a.radiusMeters) }, "watching"); }
    }).catch(function () { /* the next position tries again */ });
  }

  function start() {
    if (!navigator.geolocation) { say("arrive.unavailable", null, "unavailable"); return; }
    button.hidden = true;
    say("arrive.watching", null, "watching");
    watch = navigator.geolocation.watchPosition(report, function (err) {
      stop();
      if (err.code === 1) {
        say("arrive.denied", null, "denied");
      } else {
        say("arrive.unavailable", null, "unavailable");
        button.hidden = false;
      }
    }, { enableHighAccuracy: true, maximumAge: 10000, timeout: 30000 });
  }

  function mount(a) {
    var main = document.getElementById("ticket");
    box = document.createElement("section");
    box.className = "arrive";
    box.setAttribute("aria-labelledby", "arrive-note");
    note = document.createElement("p");
    note.id = "arrive-note";
    note.className = "note";
    note.setAttribute("role", "status");
    var privacy = document.createElement("p");
    privacy.className = "note";
    privacy.textContent = t("arrive.privacy", { radius: i18n.number(a.radiusMeters) });
    button = document.createElement("button");
    button.type = "button";
    button.className = "secondary";
    button.textContent = t("arrive.start");
    button.addEventListener("click", start);
    box.appendChild(privacy);
    box.appendChild(note);
    box.appendChild(button);
    var actions = main.querySelector(".actions");
    main.insertBefore(box, actions);
  }

  function begin() {
    post(null).then(function (a) {
      if (!a || !a.enabled) { return; }
      mount(a);
      if (a.arrived) { arrived(); return; }
      say("arrive.ask", null, "asking");
      // With permission already given, watch at once; otherwise wait for
      // the customer's tap (a prompt on load is refused by many).
      if (navigator.permissions && navigator.permissions.query) {
        navigator.permissions.query({ name: "geolocation" }).then(function (p) {
          if (p.state === "granted") { start(); }
        }, function () {});
      }
    }).catch(function () {});
  }

  // Wait for the ticket page's first ticket: its strings are loaded then.
  var tries = 0;
  var wait = setInterval(function () {
    tries++;
    if (window.qmsTicket && window.qmsTicket.tickets > 0) {
      clearInterval(wait);
      begin();
    } else if (tries > 120) {
      clearInterval(wait);
    }
  }, 250);
  window.addEventListener("pagehide", stop);
})();
