package httpx

import (
	"reflect"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// ScribbleRequests makes app, built by [NewApp], overwrite the bytes of
// every request it serves once the response is made and before the
// buffers go back to fasthttp and fiber: header values, cookies, the URI
// (path, query string, query arguments, host), the body, form arguments,
// and fiber's copy of the path that route parameters point into. It is
// for tests: NewApp leaves fiber's Immutable off, so every string a
// handler reads from the request is an alias of those buffers, valid
// until the handler returns; a handler that keeps one without copying it
// (strings.Clone) shows '#'s where its value was on the next read,
// instead of another request's bytes some day in production. The method
// is left alone: fasthttp reads it after the handler (HEAD).
//
// Call it before the app serves: it replaces the server's handler.
func ScribbleRequests(app *fiber.App) {
	next := app.Server().Handler
	app.Server().Handler = func(fc *fasthttp.RequestCtx) {
		// The platform middleware finds this state as the request's own
		// (ensureState), so production requests pay no look-up for it.
		fc.SetUserValue(keyState, &state{scribble: true})
		next(fc)
	}
}

// scribble overwrites the request's bytes (ScribbleRequests).
func scribble(c *fiber.Ctx) {
	req := c.Request()
	for k, v := range req.Header.All() {
		// fasthttp hands its constant "close" as Connection's value.
		if string(k) != fiber.HeaderConnection {
			fill(v)
		}
	}
	for k, v := range req.Header.Cookies() {
		fill(k)
		fill(v)
	}
	fill(req.Header.RequestURI())
	for k, v := range req.PostArgs().All() {
		fill(k)
		fill(v)
	}
	fill(req.Body())
	u := req.URI()
	for k, v := range u.QueryArgs().All() {
		fill(k)
		fill(v)
	}
	fill(u.QueryString())
	fill(u.PathOriginal())
	fill(u.Path())
	fill(u.Host())
	// Without Immutable, fiber's path is its own reused buffer, spelled
	// as a string; route parameters are pieces of it.
	if p := c.Path(); p != "" {
		fill(unsafe.Slice(unsafe.StringData(p), len(p)))
	}
	detachPaths(c)
}

// detachPaths drops the path buffers of fiber's context, so its next
// request spells its path in new ones. fiber's pool hands the same
// context to the next request more often than not, and a request for
// the same path (a read after the write that kept the alias, say) would
// write the same bytes back over the '#'s, hiding what was kept. Fiber
// offers no way to do it: the fields are found by name, and a fiber
// without them fails the tests that scribble rather than letting them
// pass blind.
func detachPaths(c *fiber.Ctx) {
	v := reflect.ValueOf(c).Elem()
	for _, name := range [...]string{"pathBuffer", "detectionPathBuffer"} {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeOf([]byte(nil)) {
			panic("httpx: fiber.Ctx has no []byte " + name + " for ScribbleRequests to drop")
		}
		*(*[]byte)(unsafe.Pointer(f.UnsafeAddr())) = nil
	}
}

func fill(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}
