package httpx

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// RouteTemplate is the template of the route that handled c (for example
// /api/v1/queues/:queueId), or "-" when no route matched (404, 405, or a
// request refused before routing). It is the label the access log uses, and
// the one metrics must use too: ids in a label would explode its
// cardinality. Call it after the chain has run and any error has gone
// through the error handler, which is what marks a request unmatched.
func RouteTemplate(c *fiber.Ctx) string { return routeOf(c) }

// Param is c.Params(name), without its two copies of the value. Under
// fiber's Immutable setting, which NewApp sets, Params returns
// string([]byte(value)) of a value that is already a piece of the
// request's own copy of its path (c.Path()): two allocations for
// nothing, on every read of a route parameter (issue 30, P1). Param cuts
// the value out of c.Path() along the route's template instead, when the
// template is plain (literal segments and whole-segment ":name"
// parameters, as qms's routes are) and the path follows it segment by
// segment; anything else, and any app not built by NewApp, goes to
// c.Params. TestParamAsFiber holds the two equal.
func Param(c *fiber.Ctx, name string) string {
	if st := stateOf(c); st != nil && st.immutable {
		if r := c.Route(); r != nil {
			if v, ok := segmentParam(r.Path, c.Path(), name); ok {
				return v
			}
		}
	}
	return c.Params(name)
}

// segmentParam is the segment of path under the template's ":name"
// segment; false when the template is not plain, path does not follow it
// segment by segment (but for one trailing slash, which fiber's routing
// ignores), or the value is empty.
func segmentParam(tmpl, path, name string) (string, bool) {
	var v string
	for tmpl != "" {
		if tmpl[0] != '/' || path == "" || path[0] != '/' {
			return "", false
		}
		tmpl, path = tmpl[1:], path[1:]
		ti := strings.IndexByte(tmpl, '/')
		if ti < 0 {
			ti = len(tmpl)
		}
		pi := strings.IndexByte(path, '/')
		if pi < 0 {
			pi = len(path)
		}
		ts, ps := tmpl[:ti], path[:pi]
		switch {
		case ts != "" && ts[0] == ':':
			if !plainParamName(ts[1:]) || ps == "" {
				return "", false
			}
			if ts[1:] == name {
				v = ps
			}
		case !sameLiteral(ts, ps):
			return "", false
		}
		tmpl, path = tmpl[ti:], path[pi:]
	}
	if path != "" && path != "/" || v == "" {
		return "", false
	}
	return v, true
}

// plainParamName tells whether s, after a segment's ':', is the whole of
// a parameter's name in fiber's syntax: nothing that ends a name early or
// makes it optional, greedy or constrained.
func plainParamName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

// sameLiteral tells whether the template's literal segment ts is plain
// (no byte fiber's syntax gives a meaning) and equal to the path's ps.
func sameLiteral(ts, ps string) bool {
	if len(ts) != len(ps) {
		return false
	}
	for i := 0; i < len(ts); i++ {
		switch b := ts[i]; b {
		case ':', '*', '+', '?', '\\':
			return false
		default:
			if b != ps[i] {
				return false
			}
		}
	}
	return true
}
