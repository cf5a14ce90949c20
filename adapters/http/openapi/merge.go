package openapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fragmentKeys are the top-level members a module fragment may hold; info,
// servers and security belong to the base alone.
var fragmentKeys = []string{"paths", "components", "tags", "webhooks"}

// methods are the operation members of a path item.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Assemble builds the JSON document from the *.yaml fragments at the root of
// fsys. The first file in name order is the base: it holds openapi, info,
// servers, security and the shared components. Every other file may hold
// only paths, components, tags and webhooks, which are merged in name
// order. It is an error, naming both files, when two fragments define the
// same path and method, the same component (schema, response, parameter,
// ...), the same tag or the same webhook, or when path-level members of one
// path differ between fragments.
//
// The merged document then gets the platform's conventions (see the package
// documentation) and is checked: every local $ref resolves, operationIds are
// unique, every path template parameter is declared, every operation has a
// success response, and every API-key operation names exactly one scope.
func Assemble(fsys fs.FS) ([]byte, error) {
	root, err := assemble(fsys)
	if err != nil {
		return nil, err
	}
	return encodeJSON(root)
}

func assemble(fsys fs.FS) (*object, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("openapi: no *.yaml fragments")
	}
	slices.Sort(files)
	m := &merger{origin: map[string]string{}}
	for i, name := range files {
		frag, err := readFragment(fsys, name)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			if err := m.base(name, frag); err != nil {
				return nil, err
			}
			continue
		}
		if err := m.merge(name, frag); err != nil {
			return nil, err
		}
	}
	if err := applyConventions(m.root); err != nil {
		return nil, err
	}
	sortPaths(m.root)
	if err := check(m.root); err != nil {
		return nil, err
	}
	return m.root, nil
}

func readFragment(fsys fs.FS, name string) (*object, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", name, err)
	}
	v, err := fromYAML(&n)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", name, err)
	}
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("openapi: %s: the fragment must be a mapping", name)
	}
	return o, nil
}

type merger struct {
	root *object
	// origin records "file:line" for every merged definition, keyed like
	// "paths /api/v1/queues get" or "components schemas Queue".
	origin map[string]string
}

func (m *merger) base(file string, frag *object) error {
	if v := frag.str("openapi"); !strings.HasPrefix(v, "3.1") {
		return fmt.Errorf("openapi: %s is the base fragment (first in name order) and must declare openapi: 3.1.x", file)
	}
	m.root = newObject()
	for _, k := range frag.keys {
		if !slices.Contains(fragmentKeys, k) {
			m.root.set(k, frag.vals[k])
		}
	}
	// The base's paths and components go through the same merge as any
	// fragment's, so conflicts are reported alike.
	rest := newObject()
	for _, k := range fragmentKeys {
		if v, ok := frag.get(k); ok {
			rest.set(k, v)
			rest.line[k] = frag.line[k]
		}
	}
	return m.merge(file, rest)
}

func (m *merger) at(file string, o *object, k string) string {
	return fmt.Sprintf("%s:%d", file, o.line[k])
}

func (m *merger) define(key, where string) error {
	if prev, ok := m.origin[key]; ok {
		return fmt.Errorf("openapi: %s is defined twice: in %s and in %s", key, prev, where)
	}
	m.origin[key] = where
	return nil
}

func (m *merger) merge(file string, frag *object) error {
	for _, k := range frag.keys {
		if !slices.Contains(fragmentKeys, k) {
			return fmt.Errorf("openapi: %s: a module fragment may hold only %s, not %q (it belongs to the base)",
				m.at(file, frag, k), strings.Join(fragmentKeys, ", "), k)
		}
	}
	if err := m.mergePaths(file, frag.obj("paths")); err != nil {
		return err
	}
	if comps := frag.obj("components"); comps != nil {
		dst, err := m.root.child("components")
		if err != nil {
			return err
		}
		for _, section := range comps.keys {
			src, ok := comps.vals[section].(*object)
			if !ok {
				return fmt.Errorf("openapi: %s: components.%s must be a mapping", m.at(file, comps, section), section)
			}
			d, err := dst.child(section)
			if err != nil {
				return err
			}
			if err := m.mergeNamed(file, "components "+section, src, d); err != nil {
				return err
			}
		}
	}
	if wh := frag.obj("webhooks"); wh != nil {
		d, err := m.root.child("webhooks")
		if err != nil {
			return err
		}
		if err := m.mergeNamed(file, "webhooks", wh, d); err != nil {
			return err
		}
	}
	if v, ok := frag.get("tags"); ok {
		tags, ok := v.([]any)
		if !ok {
			return fmt.Errorf("openapi: %s: tags must be a list", m.at(file, frag, "tags"))
		}
		all, _ := m.root.get("tags")
		list, _ := all.([]any)
		for _, t := range tags {
			to, _ := t.(*object)
			name := to.str("name")
			if name == "" {
				return fmt.Errorf("openapi: %s: every tag needs a name", m.at(file, frag, "tags"))
			}
			if err := m.define("tag "+name, m.at(file, frag, "tags")); err != nil {
				return err
			}
			list = append(list, to)
		}
		m.root.set("tags", list)
	}
	return nil
}

func (m *merger) mergeNamed(file, what string, src, dst *object) error {
	for _, name := range src.keys {
		if err := m.define(what+" "+name, m.at(file, src, name)); err != nil {
			return err
		}
		dst.set(name, src.vals[name])
	}
	return nil
}

func (m *merger) mergePaths(file string, paths *object) error {
	if paths == nil {
		return nil
	}
	dst, err := m.root.child("paths")
	if err != nil {
		return err
	}
	for _, p := range paths.keys {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("openapi: %s: path %q must start with /", m.at(file, paths, p), p)
		}
		item, ok := paths.vals[p].(*object)
		if !ok {
			return fmt.Errorf("openapi: %s: path %q must be a mapping", m.at(file, paths, p), p)
		}
		d, err := dst.child(p)
		if err != nil {
			return err
		}
		for _, k := range item.keys {
			where := m.at(file, item, k)
			if slices.Contains(methods, k) {
				if err := m.define("operation "+strings.ToUpper(k)+" "+p, where); err != nil {
					return err
				}
				d.set(k, item.vals[k])
				continue
			}
			// Path-level members (parameters, summary, ...) may repeat in
			// several fragments only if they agree.
			if prev, ok := d.get(k); ok {
				if !equal(prev, item.vals[k]) {
					return fmt.Errorf("openapi: %s: path %q member %q differs from its definition in %s",
						where, p, k, m.origin["path "+p+" "+k])
				}
				continue
			}
			m.origin["path "+p+" "+k] = where
			d.set(k, item.vals[k])
		}
	}
	return nil
}

// sortPaths lists paths alphabetically, so the document does not depend on
// which fragment a path came from.
func sortPaths(root *object) {
	if p := root.obj("paths"); p != nil {
		slices.Sort(p.keys)
	}
}

// Security kinds of an operation, which decide its conventions.
const (
	kindAPIKey    = "apiKey"      // security: apiKey (an /api/v1 endpoint)
	kindAdmin     = "adminBearer" // security: adminBearer (/admin/v1)
	kindPublicAPI = "publicAPI"   // security: [] under /api/v1: no key, still rate limited by client address
	kindPublic    = "public"      // security: [] elsewhere (health checks)
)

type convention struct {
	headers     []string          // header components every inline 2xx response carries
	errors      map[string]string // status -> response component, added when the operation lacks it
	unsupported string            // the 415 response of operations with a body
}

var conventions = map[string]convention{
	kindAPIKey: {
		headers: []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
		errors: map[string]string{"400": "BadRequest", "401": "Unauthorized", "402": "PaymentRequired",
			"403": "Forbidden", "413": "PayloadTooLarge", "431": "HeadersTooLarge", "429": "RateLimited", "500": "InternalError",
			"503": "ServiceUnavailable"},
		unsupported: "UnsupportedMediaType",
	},
	kindAdmin: {
		headers: []string{"X-Request-Id"},
		errors: map[string]string{"400": "AdminBadRequest", "401": "AdminUnauthorized", "413": "PayloadTooLarge", "431": "HeadersTooLarge",
			"429": "AdminRateLimited", "500": "AdminInternalError", "503": "AdminServiceUnavailable"},
		unsupported: "AdminUnsupportedMediaType",
	},
	kindPublicAPI: {
		headers:     []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
		errors:      map[string]string{"413": "PayloadTooLarge", "431": "HeadersTooLarge", "429": "RateLimited", "500": "InternalError", "503": "ServiceUnavailable"},
		unsupported: "UnsupportedMediaType",
	},
	kindPublic: {
		headers: []string{"X-Request-Id"},
		errors:  map[string]string{"413": "PayloadTooLarge", "431": "HeadersTooLarge", "500": "AdminInternalError", "503": "AdminServiceUnavailable"},
	},
}

// securityKind tells the conventions an operation follows from its
// security requirement (its own, else the document's).
func securityKind(root, op *object, p string) (string, error) {
	sec, ok := op.get("security")
	if !ok {
		sec, _ = root.get("security")
	}
	list, _ := sec.([]any)
	if len(list) == 0 {
		if strings.HasPrefix(p, "/api/") {
			return kindPublicAPI, nil
		}
		return kindPublic, nil
	}
	if len(list) != 1 {
		return "", errors.New("alternative security requirements are not supported")
	}
	req, _ := list[0].(*object)
	if req == nil || len(req.keys) != 1 {
		return "", errors.New("a security requirement must name exactly one scheme")
	}
	switch req.keys[0] {
	case kindAPIKey, kindAdmin:
		return req.keys[0], nil
	}
	return "", fmt.Errorf("unknown security scheme %q", req.keys[0])
}

func applyConventions(root *object) error {
	paths := root.obj("paths")
	for _, p := range paths.keys {
		item := paths.obj(p)
		for _, method := range methods {
			op := item.obj(method)
			if op == nil {
				continue
			}
			where := strings.ToUpper(method) + " " + p
			kind, err := securityKind(root, op, p)
			if err != nil {
				return fmt.Errorf("openapi: %s: %w", where, err)
			}
			conv := conventions[kind]
			responses := op.obj("responses")
			if responses == nil {
				return fmt.Errorf("openapi: %s: no responses", where)
			}
			for _, code := range responses.keys {
				resp, ok := responses.vals[code].(*object)
				if !ok || resp.has("$ref") || !strings.HasPrefix(code, "2") {
					continue
				}
				headers, err := resp.child("headers")
				if err != nil {
					return fmt.Errorf("openapi: %s %s: %w", where, code, err)
				}
				for _, h := range conv.headers {
					if !headers.has(h) {
						headers.set(h, ref("headers", h))
					}
				}
			}
			for code, name := range conv.errors {
				if !responses.has(code) {
					responses.set(code, ref("responses", name))
				}
			}
			if op.has("requestBody") && conv.unsupported != "" && !responses.has("415") {
				responses.set("415", ref("responses", conv.unsupported))
			}
			slices.SortStableFunc(responses.keys, func(a, b string) int { return codeRank(a) - codeRank(b) })
		}
	}
	return nil
}

func ref(section, name string) *object {
	o := newObject()
	o.set("$ref", "#/components/"+section+"/"+name)
	return o
}

var templateParam = regexp.MustCompile(`\{([^{}]+)\}`)

// check runs the structural checks that no fragment can be trusted to get
// right by itself.
func check(root *object) error {
	var errs []error
	walkRefs(root, func(r string) {
		if _, ok := resolve(root, r); !ok {
			errs = append(errs, fmt.Errorf("$ref %q does not resolve", r))
		}
	})
	ids := map[string]string{}
	paths := root.obj("paths")
	for _, p := range paths.keys {
		item := paths.obj(p)
		for _, method := range methods {
			op := item.obj(method)
			if op == nil {
				continue
			}
			where := strings.ToUpper(method) + " " + p
			id := op.str("operationId")
			if id == "" {
				errs = append(errs, fmt.Errorf("%s: no operationId", where))
			} else if prev, ok := ids[id]; ok {
				errs = append(errs, fmt.Errorf("%s: operationId %q is also used by %s", where, id, prev))
			} else {
				ids[id] = where
			}
			declared := map[string]bool{}
			for _, params := range []any{item.vals["parameters"], op.vals["parameters"]} {
				list, _ := params.([]any)
				for _, prm := range list {
					po, _ := prm.(*object)
					if r := po.str("$ref"); r != "" {
						v, _ := resolve(root, r)
						po, _ = v.(*object)
					}
					if po.str("in") == "path" {
						declared[po.str("name")] = true
					}
				}
			}
			for _, m := range templateParam.FindAllStringSubmatch(p, -1) {
				if !declared[m[1]] {
					errs = append(errs, fmt.Errorf("%s: path parameter %q is not declared", where, m[1]))
				}
			}
			success := false
			for _, code := range op.obj("responses").keys {
				success = success || strings.HasPrefix(code, "2")
			}
			if !success {
				errs = append(errs, fmt.Errorf("%s: no success (2xx) response", where))
			}
			if kind, _ := securityKind(root, op, p); kind == kindAPIKey {
				sec, _ := op.get("security")
				list, _ := sec.([]any)
				var scopes []any
				if len(list) == 1 {
					scopes, _ = list[0].(*object).vals[kindAPIKey].([]any)
				}
				if len(scopes) != 1 {
					errs = append(errs, fmt.Errorf("%s: an API-key operation must declare security: [{apiKey: [<the one scope it requires>]}]", where))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("openapi: the assembled document is inconsistent:\n%w", errors.Join(errs...))
	}
	return nil
}

func walkRefs(v any, f func(string)) {
	switch v := v.(type) {
	case *object:
		for _, k := range v.keys {
			if s, ok := v.vals[k].(string); ok && k == "$ref" {
				f(s)
				continue
			}
			walkRefs(v.vals[k], f)
		}
	case []any:
		for _, e := range v {
			walkRefs(e, f)
		}
	}
}

// resolve follows a local reference ("#/components/schemas/Queue").
func resolve(root *object, r string) (any, bool) {
	rest, ok := strings.CutPrefix(r, "#/")
	if !ok {
		return nil, false
	}
	var cur any = root
	for _, tok := range strings.Split(rest, "/") {
		tok, err := url.PathUnescape(tok)
		if err != nil {
			return nil, false
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		o, isObj := cur.(*object)
		if !isObj {
			return nil, false
		}
		if cur, ok = o.get(tok); !ok {
			return nil, false
		}
	}
	return cur, true
}
