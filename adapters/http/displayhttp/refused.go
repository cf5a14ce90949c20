package displayhttp

import (
	"html"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
)

// refusedPage is the small page a board's address answers when its token
// is revoked (410) or unknown (404): a screen opened on a dead link says
// so at once, in words, instead of loading the board to find out. It has
// no script and no style sheet, so it needs nothing the CSP would have to
// allow.
const refusedPage = `<!doctype html>
<html lang="en">
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

// refusal is what a board's page says for a token Resolve refused, and
// with which status; ok false for errors that are not about the token.
func refusal(err error) (status int, title, text string, ok bool) {
	switch {
	case platform.IsCode(err, display.CodeDisplayTokenRevoked):
		return fiber.StatusGone, "This display link has been revoked",
			"Ask the staff for a new display link.", true
	case platform.IsCode(err, display.CodeInvalidDisplayToken):
		return fiber.StatusNotFound, "This display link is not valid",
			"Check the address, or ask the staff for a new display link.", true
	}
	return 0, "", "", false
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
	status, title, text, ok := refusal(err)
	if !ok {
		log.Warn("display: checking a board's token failed; serving the page", "err", err)
		return c.Send(page)
	}
	body := strings.NewReplacer("%TITLE%", html.EscapeString(title), "%TEXT%", html.EscapeString(text)).Replace(refusedPage)
	return c.Status(status).SendString(body)
}
