package displayhttp

import (
	"bytes"
	"context"
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
// no script; it wears the board's own style sheet (its full-screen message
// panel), so a TV shows the refusal large, in the board's colours, as it
// would over a live board. It speaks the board's languages, with the
// board's own words (the i18nweb catalogues), chosen by ?lang= or else the
// browser's Accept-Language.
const refusedPage = `<!doctype html>
<html lang="%LANG%">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>%TITLE% · qms</title>
<link rel="stylesheet" href="/display/assets/board.css">
</head>
<body>
<main class="message" role="alert">
<div>
<h1>%TITLE%</h1>
<p>%TEXT%</p>
</div>
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
//
// A live token's page carries its first paint: the board as it is now and
// the strings of its language, in a JSON block the script renders before
// it opens the stream. So the page shows the real board at once (and a
// headless `chromium --screenshot` of it captures the board, not
// "Connecting…"), and the stream only keeps it current.
func pageFor(c *fiber.Ctx, svc *display.Service, boardOf boardFunc, log *slog.Logger, page []byte) error {
	tok, err := svc.Resolve(c.UserContext(), strings.Clone(c.Params("token")))
	if err == nil {
		return c.Send(withFirstPaint(c, boardOf, log, tok, page))
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

// firstPaint is the JSON block of a board's page (id "qms-initial").
type firstPaint struct {
	Lang    string            `json:"lang"`
	Strings map[string]string `json:"strings"`
	Board   display.Board     `json:"board"`
}

// boardFunc is the board a token's screen shows now.
type boardFunc func(ctx context.Context, t display.Token) (display.Board, error)

// withFirstPaint puts the board and its language's strings into page; the
// page as it is when the board cannot be read (the stream brings it). The
// board comes from the run's built view when its group is live (boardOf).
func withFirstPaint(c *fiber.Ctx, boardOf boardFunc, log *slog.Logger, tok display.Token, page []byte) []byte {
	b, err := boardOf(c.UserContext(), tok)
	if err != nil {
		log.Warn("display: reading a board for its first paint failed; the stream brings it", "err", err)
		return page
	}
	lang := "en"
	if l := c.Query("lang"); display.ValidLanguage(l) {
		lang = l
	} else if b.Options.Language != nil && display.ValidLanguage(*b.Options.Language) {
		lang = *b.Options.Language
	} else {
		lang = pageLanguage(c)
	}
	// encoding/json escapes <, > and & in strings, so nothing in the
	// board (a queue's name, say) can close the script element.
	data, err := json.Marshal(firstPaint{Lang: lang, Strings: catalogue(lang), Board: b})
	if err != nil {
		log.Warn("display: encoding a board's first paint failed", "err", err)
		return page
	}
	block := append(append([]byte(`<script id="qms-initial" type="application/json">`), data...), "</script>\n"...)
	i := bytes.Index(page, []byte("<script"))
	if i < 0 {
		return page
	}
	out := make([]byte, 0, len(page)+len(block))
	out = append(append(append(out, page[:i]...), block...), page[i:]...)
	return out
}
