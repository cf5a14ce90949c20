package counterhttp

import (
	"encoding/json"
	"html"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/core/counter"
	"github.com/qms-dev/qms/core/platform"
)

// refusedPage is what a console's address answers when its link is
// revoked (410) or unknown (404): a small page without script or style,
// in the console's language, saying so at once.
const refusedPage = `<!doctype html>
<html lang="%LANG%">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>%TITLE% · qms</title>
</head>
<body>
<main>
<h1>%TITLE%</h1>
<p>%TEXT%</p>
</main>
</body>
</html>
`

// pageLanguage is ?lang= when it is one of the console's languages, else
// the first of the browser's that is, else English.
func pageLanguage(c *fiber.Ctx) string {
	if l := c.Query("lang"); counter.ValidLanguage(l) {
		return l
	}
	for _, part := range strings.Split(c.Get(fiber.HeaderAcceptLanguage), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if counter.ValidLanguage(primary) {
			return primary
		}
	}
	return "en"
}

// catalogue reads a language's strings (English when it cannot).
func catalogue(lang string) map[string]string {
	var m map[string]string
	b, err := fs.ReadFile(i18nweb.Files(), "i18n/"+lang+".json")
	if err != nil || json.Unmarshal(b, &m) != nil {
		if lang != "en" {
			return catalogue("en")
		}
	}
	return m
}

// pageFor answers a console's address: the page for a live link, the
// refusal page for a revoked or unknown one. When the link cannot be
// checked (storage unreachable) the page is served anyway: it retries by
// itself and tells the link's fate once it can.
func pageFor(c *fiber.Ctx, svc *counter.Service, log *slog.Logger, page []byte) error {
	_, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
	if err == nil {
		return c.Send(page)
	}
	var status int
	var titleKey, textKey string
	switch {
	case platform.IsCode(err, counter.CodeCounterLinkRevoked):
		status, titleKey, textKey = fiber.StatusGone, "counter.revokedTitle", "counter.revokedText"
	case platform.IsCode(err, counter.CodeInvalidCounterLink):
		status, titleKey, textKey = fiber.StatusNotFound, "counter.invalidTitle", "counter.invalidText"
	default:
		log.Warn("counter: checking a console's link failed; serving the page", "err", err)
		return c.Send(page)
	}
	lang := pageLanguage(c)
	words := catalogue(lang)
	body := strings.NewReplacer("%LANG%", lang, "%TITLE%", html.EscapeString(words[titleKey]),
		"%TEXT%", html.EscapeString(words[textKey])).Replace(refusedPage)
	return c.Status(status).SendString(body)
}
