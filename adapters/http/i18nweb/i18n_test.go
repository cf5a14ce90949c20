package i18nweb_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/core/display"
)

var placeholder = regexp.MustCompile(`\{\w+\}`)

// TestEveryCatalogueHasEveryKey: one catalogue per language of
// display.Languages, each with exactly the keys of the English one (none
// missing, none extra), none empty, and the same {placeholders} in each
// string, so no page ever shows a key or an unfilled {count}.
func TestEveryCatalogueHasEveryKey(t *testing.T) {
	files := i18nweb.Files()
	read := func(lang string) map[string]string {
		b, err := fs.ReadFile(files, "i18n/"+lang+".json")
		if err != nil {
			t.Fatalf("catalogue %s: %v", lang, err)
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("catalogue %s: %v", lang, err)
		}
		return m
	}
	entries, err := fs.ReadDir(files, "i18n")
	if err != nil {
		t.Fatal(err)
	}
	var langs []string
	for _, e := range entries {
		langs = append(langs, strings.TrimSuffix(e.Name(), ".json"))
	}
	want := slices.Clone(display.Languages)
	sort.Strings(want)
	sort.Strings(langs)
	if !slices.Equal(langs, want) {
		t.Fatalf("catalogues %v, want one for each of display.Languages %v", langs, want)
	}
	en := read("en")
	for _, lang := range langs {
		cat := read(lang)
		for k, s := range en {
			got, ok := cat[k]
			if !ok {
				t.Errorf("%s.json lacks %q", lang, k)
				continue
			}
			if strings.TrimSpace(got) == "" {
				t.Errorf("%s.json: %q is empty", lang, k)
			}
			a, b := placeholder.FindAllString(s, -1), placeholder.FindAllString(got, -1)
			sort.Strings(a)
			sort.Strings(b)
			if !slices.Equal(a, b) {
				t.Errorf("%s.json: %q has placeholders %v, English has %v", lang, k, b, a)
			}
		}
		for k := range cat {
			if _, ok := en[k]; !ok {
				t.Errorf("%s.json has %q, which en.json lacks", lang, k)
			}
		}
	}
	// i18n.js lists the same languages.
	js, err := fs.ReadFile(files, "i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	q := make([]string, len(display.Languages))
	for i, l := range display.Languages {
		q[i] = `"` + l + `"`
	}
	if !strings.Contains(string(js), "var supported = ["+strings.Join(q, ", ")+"]") {
		t.Errorf("i18n.js must list the languages %v", display.Languages)
	}
}

// TestPagesUseOnlyCataloguedKeys: every key the pages name (data-i18n
// attributes, t("..."), plural("...")) is in the catalogues, and every
// catalogued key is used by a page (dynamic keys are named by prefix:
// "ticket.status." + status).
func TestPagesUseOnlyCataloguedKeys(t *testing.T) {
	keys := i18nweb.Keys()
	used := map[string]bool{}
	ref := regexp.MustCompile(`(?:data-i18n="|\b(?:t|plural)\(")([a-z]+\.[A-Za-z_.]+[A-Za-z_])"`)
	prefix := regexp.MustCompile(`\b(?:t|plural)\("([a-z]+\.[A-Za-z_.]*\.)" \+`)
	literal := regexp.MustCompile(`"([a-z]+\.[A-Za-z_.]+[A-Za-z_])"`)
	var prefixes []string
	// The join page's poster is drawn in Go (joinhttp): its keys are
	// named there as str["poster.title"].
	goKey := regexp.MustCompile(`str\["([a-z]+\.[A-Za-z0-9_.]+)"\]`)
	if b, err := os.ReadFile("../joinhttp/routes.go"); err != nil {
		t.Fatal(err)
	} else {
		for _, m := range goKey.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
			if !keys[m[1]] {
				t.Errorf("joinhttp/routes.go uses %q, which no catalogue has", m[1])
			}
		}
	}
	for _, dir := range []string{"../displayhttp/web", "../tickethttp/web", "../joinhttp/web", "../counterhttp/web"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || !(strings.HasSuffix(e.Name(), ".js") || strings.HasSuffix(e.Name(), ".html")) {
				continue
			}
			b, err := os.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
				used[m[1]] = true
				if !keys[m[1]] && !keys[m[1]+".other"] {
					t.Errorf("%s/%s uses %q, which no catalogue has", dir, e.Name(), m[1])
				}
			}
			for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
				used[m[1]] = true // a key in a table ({live: "conn.live"})
			}
			for _, m := range prefix.FindAllStringSubmatch(string(b), -1) {
				prefixes = append(prefixes, m[1])
			}
		}
	}
	for k := range keys {
		ok := used[k] || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) })
		if base, _, cut := strings.Cut(k, ".one"); cut && used[base] {
			ok = true
		}
		if base, _, cut := strings.Cut(k, ".other"); cut && used[base] {
			ok = true
		}
		if !ok {
			t.Errorf("%q is in the catalogues but no page uses it", k)
		}
	}
}
