// The waiting-room pages' strings: one catalogue per language
// (/i18n/<lang>.json, every key in each; a Go test checks it). The
// language is the link's ?lang=, else the token's option (given later by
// the page, with use()), else the first of the browser's languages that
// has a catalogue, else English. Numbers and times are formatted for the
// language with Intl.
(function () {
  "use strict";
  var supported = ["en", "es", "pt", "fr"];
  var cache = {};
  var param = new URLSearchParams(location.search).get("lang");
  // A page may carry its first paint (a JSON block the server wrote, id
  // qms-initial): its language's strings seed the cache, so the first
  // render needs no round trip and happens before the page's load event.
  var initial = null;
  try {
    var block = document.getElementById("qms-initial");
    initial = block ? JSON.parse(block.textContent) : null;
  } catch (e) { initial = null; }
  if (initial && initial.lang && initial.strings) { cache[initial.lang] = Promise.resolve(initial.strings); }
  function pick(tag) {
    if (!tag) { return null; }
    var base = String(tag).toLowerCase().split("-")[0];
    return supported.indexOf(base) >= 0 ? base : null;
  }
  function browser() {
    var langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language];
    for (var i = 0; i < langs.length; i++) { if (pick(langs[i])) { return pick(langs[i]); } }
    return "en";
  }
  var api = {
    lang: pick(param) || (initial && pick(initial.lang)) || browser(),
    initial: initial,
    fromLink: !!pick(param),
    strings: {},
    // load fetches the catalogue of lang and makes it current.
    load: function (lang) {
      lang = pick(lang) || "en";
      var p = cache[lang] || (cache[lang] = fetch("/i18n/" + lang + ".json").then(function (r) {
        if (!r.ok) { throw new Error("catalogue " + lang + ": " + r.status); }
        return r.json();
      }));
      return p.then(function (strings) {
        api.lang = lang;
        api.strings = strings;
        document.documentElement.lang = lang;
        api.apply(document);
        return lang;
      });
    },
    // use switches to the token's language, unless the link names one.
    // It resolves to true when the language changed.
    use: function (lang) {
      var want = api.fromLink ? api.lang : (pick(lang) || browser());
      if (want === api.lang && api.strings["conn.live"]) { return Promise.resolve(false); }
      return api.load(want).then(function () { return true; });
    },
    // t is the string of key, with {name} replaced from vars.
    t: function (key, vars) {
      var s = api.strings[key];
      if (s == null) { s = key; }
      return s.replace(/\{(\w+)\}/g, function (m, k) { return vars && vars[k] != null ? String(vars[k]) : m; });
    },
    // plural picks key.one / key.other by the language's rules.
    plural: function (key, n, vars) {
      var cat = new Intl.PluralRules(api.lang).select(n);
      var k = api.strings[key + "." + cat] != null ? key + "." + cat : key + ".other";
      return api.t(k, vars);
    },
    number: function (n) { return new Intl.NumberFormat(api.lang).format(n); },
    time: function (d) { return new Intl.DateTimeFormat(api.lang, { hour: "2-digit", minute: "2-digit" }).format(d); },
    // apply sets the text of every element with data-i18n under root.
    apply: function (root) {
      Array.prototype.forEach.call(root.querySelectorAll("[data-i18n]"), function (el) {
        el.textContent = api.t(el.getAttribute("data-i18n"));
      });
    }
  };
  window.qmsI18n = api;
})();
