package displayhttp

import (
	"encoding/json"
	"html"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/i18nweb"
	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
)

// refusedPage is the small page a board's address answers when its token
// is revoked (410) or unknown (404): a screen opened on a dead link says
// so at once, in words, instead of loading the board to find out. It has
// no script and no style sheet, so it needs nothing the CSP would have to
// allow. It speaks the board's languages, with the board's own words
// (the i18nweb catalogues), chosen by ?lang= or else the browser's
// Accept-Language.
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

// refusal is the status and the catalogue keys of what a board's page
// says for a token Resolve refused; ok false for errors that are not
// about the token.
func refusal(err error) (status int, title, text string, ok bool) {
	switch {
	case platform.IsCode(err, display.CodeDisplayTokenRevoked):
		return fiber.StatusGone, "board.revokedTitle", "board.revokedText", true
	case platform.IsCode(err, display.CodeInvalidDisplayToken):
		return fiber.StatusNotFound, "board.invalidTitle", "board.invalidText", true
	}
	return 0, "", "", false
}

// pageLanguage is ?lang= when it is one of the board's languages, else
// the first of the browser's that is, else English.
func pageLanguage(c *fiber.Ctx) string {
	if l := c.Query("lang"); display.ValidLanguage(l) {
		return l
	}
	for _, part := range strings.Split(c.Get(fiber.HeaderAcceptLanguage), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		primary, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if display.ValidLanguage(primary) {
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

// pageFor answers a board's address: the board's page for a live token,
// the refusal page for a revoked or unknown one. When the token cannot be
// checked (storage unreachable) the board's page is served anyway: it
// retries by itself and tells the token's fate once it can.
func pageFor(c *fiber.Ctx, svc *display.Service, log *slog.Logger, page []byte) error {
	_, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
	if err == nil {
		return c.Send(page)
	}
	status, titleKey, textKey, ok := refusal(err)
	if !ok {
		log.Warn("display: checking a board's token failed; serving the page", "err", err)
		return c.Send(page)
	}
	lang := pageLanguage(c)
	words := catalogue(lang)
	body := strings.NewReplacer("%LANG%", lang, "%TITLE%", html.EscapeString(words[titleKey]),
		"%TEXT%", html.EscapeString(words[textKey])).Replace(refusedPage)
	return c.Status(status).SendString(body)
}
