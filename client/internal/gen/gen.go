// Package gen generates the Go SDK (package client) from qms's OpenAPI
// document: a Go type for every schema an operation reaches, and a typed
// method for every operation, so the SDK cannot drift from the API as
// built. client's tests regenerate the code and fail when it differs from
// the committed zz_generated.go; `go generate ./client` rewrites it.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Excluded operations have no SDK method, each for the reason given. The
// coverage test checks this list against the document too.
var Excluded = map[string]string{
	"getDisplayPage":              "the board's HTML page, for a browser",
	"getDisplayAsset":             "the board page's script and style sheet, for a browser",
	"getMetrics":                  "Prometheus text for a scraper, not for integrators",
	"getTicketPage":               "the customer's ticket page, for a browser",
	"getTicketAsset":              "the ticket page's script and style sheet, for a browser",
	"getPageStrings":              "the waiting-room pages' strings and the script choosing them, for a browser",
	"getTicketQRCodeSVG":          "an image to print or show, not JSON",
	"getTicketQRCodePNG":          "an image to print or show, not JSON",
	"streamTicket":                "the customer's ticket page's stream, for a browser (GetTicket reads the same ticket)",
	"getJoinPage":                 "the join page's HTML, for a customer's browser",
	"getJoinAsset":                "the join page's scripts and style sheets, for a browser",
	"getJoinQRCodeSVG":            "an image to print or show, not JSON",
	"getJoinQRCodePNG":            "an image to print or show, not JSON",
	"getJoinPoster":               "a poster to print, HTML",
	"twilioStatusCallback":        "Twilio's signed status callback, called by Twilio",
	"twilioInbound":               "Twilio's signed incoming-message webhook, called by Twilio",
	"whatsappVerify":              "Meta's webhook verification handshake, called by Meta",
	"whatsappWebhook":             "the WhatsApp Cloud API's signed webhook, called by Meta",
	"accountTwilioStatusCallback": "an account's own Twilio status callback, called by Twilio",
	"accountTwilioInbound":        "an account's own Twilio incoming-message webhook, called by Twilio",
	"accountWhatsappVerify":       "an account's own Meta webhook verification handshake, called by Meta",
	"accountWhatsappWebhook":      "an account's own WhatsApp Cloud API webhook, called by Meta",
	"getCounterPage":              "the staff console's HTML page, for a browser",
	"getCounterAsset":             "the staff console's script and style sheet, for a browser",
	"streamCounterConsole":        "the staff console's stream, for a browser (GetCounterConsole reads the same console)",
}

// Handwritten operations have methods written by hand in the client
// package (streams), named here; the generator emits none for them.
var Handwritten = map[string][]string{
	"streamEvents":                      {"Client.SubscribeEvents", "Client.PollEvents"},
	"streamDisplayBoard":                {"Client.SubscribeDisplayBoard"},
	"deleteNotificationAccountSettings": {"Client.DeleteNotificationSettings"},
}

// reserved are the names of the client package's hand-written
// declarations; a schema of the same name stops generation.
var reserved = map[string]bool{
	"Client": true, "Admin": true, "ClientOption": true, "Retry": true, "Error": true, "FieldError": true,
	"Nullable": true, "Operation": true, "Event": true, "EventStream": true, "StreamOptions": true,
	"BoardStream": true, "BoardUpdate": true, "BoardTrigger": true, "Value": true, "Null": true, "Ptr": true,
}

// Operation is one operation of the document as the SDK covers it.
type Operation struct {
	ID, Method, Path string
	// GoMethods are the SDK methods that call it ("Client.CreateTurn").
	GoMethods []string
}

type schema = map[string]any

type generator struct {
	doc     schema
	schemas schema
	params  schema
	bodies  schema
	types   map[string]string // type name -> declaration
	order   []string
	pending []string // component schemas to emit
	emitted map[string]bool
	ops     []Operation
	methods []string
}

// Generate returns the gofmt'ed source of zz_generated.go for the document
// (JSON), and the operations it covers.
func Generate(document []byte) ([]byte, []Operation, error) {
	var doc schema
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, nil, fmt.Errorf("gen: the document is not JSON: %w", err)
	}
	comps, _ := doc["components"].(schema)
	g := &generator{doc: doc, types: map[string]string{}, emitted: map[string]bool{}}
	g.schemas, _ = comps["schemas"].(schema)
	g.params, _ = comps["parameters"].(schema)
	g.bodies, _ = comps["requestBodies"].(schema)

	paths, _ := doc["paths"].(schema)
	pathKeys := keys(paths)
	for _, p := range pathKeys {
		item, _ := paths[p].(schema)
		for _, m := range []string{"get", "put", "post", "patch", "delete"} {
			op, ok := item[m].(schema)
			if !ok {
				continue
			}
			if err := g.operation(p, m, item, op); err != nil {
				return nil, nil, err
			}
		}
	}
	for len(g.pending) > 0 {
		name := g.pending[0]
		g.pending = g.pending[1:]
		if err := g.component(name); err != nil {
			return nil, nil, err
		}
	}

	var b bytes.Buffer
	b.WriteString("// Code generated by client/internal/gen from the OpenAPI document; DO NOT EDIT.\n\n")
	b.WriteString("package client\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\t\"net/http\"\n\t\"net/url\"\n\t\"strconv\"\n\t\"time\"\n)\n\n")
	b.WriteString("var (\n\t_ = json.RawMessage(nil)\n\t_ = strconv.Itoa\n\t_ = time.Time{}\n\t_ = url.PathEscape\n\t_ http.Header\n)\n\n")
	sorted := append([]string(nil), g.order...)
	sort.Strings(sorted)
	for _, name := range sorted {
		b.WriteString(g.types[name])
		b.WriteString("\n")
	}
	for _, m := range g.methods {
		b.WriteString(m)
		b.WriteString("\n")
	}
	b.WriteString("// operations lists the document's operations and the SDK methods that call them.\n")
	b.WriteString("var operations = []Operation{\n")
	ops := append([]Operation(nil), g.ops...)
	for id, ms := range Handwritten {
		for i := range ops {
			if ops[i].ID == id {
				ops[i].GoMethods = ms
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	for _, o := range ops {
		fmt.Fprintf(&b, "\t{ID: %q, Method: %q, Path: %q, GoMethods: %#v},\n", o.ID, o.Method, o.Path, o.GoMethods)
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return b.Bytes(), nil, fmt.Errorf("gen: gofmt: %w", err)
	}
	return src, ops, nil
}

func keys(m schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// initialisms are written in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "sla": "SLA", "api": "API", "json": "JSON"}

// exported turns an operationId, a property or an enum value into a Go
// name: words split at separators and case changes, each capitalised,
// initialisms in capitals (queueRunId: QueueRunID).
func exported(s string) string {
	var words []string
	var cur []rune
	rs := []rune(s)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		if in, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(in)
			continue
		}
		r := []rune(w)
		b.WriteString(strings.ToUpper(string(r[0])) + string(r[1:]))
	}
	return b.String()
}

// param is a Go parameter name for a path or query parameter.
func param(s string) string {
	n := exported(s)
	lowered := false
	for _, in := range initialisms {
		if strings.HasPrefix(n, in) {
			n, lowered = strings.ToLower(in)+n[len(in):], true
			break
		}
	}
	if !lowered {
		n = strings.ToLower(n[:1]) + n[1:]
	}
	switch n {
	case "type", "func", "range", "default", "var", "map":
		return n + "_"
	}
	return n
}

func (g *generator) ref(r string) (string, schema, bool) {
	name, ok := strings.CutPrefix(r, "#/components/schemas/")
	if !ok {
		return "", nil, false
	}
	s, ok := g.schemas[name].(schema)
	return name, s, ok
}

func (g *generator) need(name string) {
	if !g.emitted[name] {
		g.emitted[name] = true
		g.pending = append(g.pending, name)
	}
}

// nullable reports whether a schema admits null, and returns the schema
// without the null alternative.
func nullable(s schema) (schema, bool) {
	if t, ok := s["type"].([]any); ok {
		var rest []any
		null := false
		for _, x := range t {
			if x == "null" {
				null = true
			} else {
				rest = append(rest, x)
			}
		}
		if null {
			c := schema{}
			for k, v := range s {
				c[k] = v
			}
			if len(rest) == 1 {
				c["type"] = rest[0]
			} else {
				c["type"] = rest
			}
			return c, true
		}
	}
	if s["type"] == "null" {
		return s, true
	}
	if one, ok := s["oneOf"].([]any); ok && len(one) == 2 {
		var other schema
		null := false
		for _, x := range one {
			xs, _ := x.(schema)
			if xs["type"] == "null" {
				null = true
			} else {
				other = xs
			}
		}
		if null {
			return other, true
		}
	}
	return s, false
}

// goType returns the Go type of a schema; context names inline objects.
func (g *generator) goType(s schema, context string) (string, error) {
	if r, ok := s["$ref"].(string); ok {
		name, target, ok := g.ref(r)
		if !ok {
			return "", fmt.Errorf("gen: unresolved $ref %q", r)
		}
		if isAlias(target) {
			return g.goType(target, name)
		}
		g.need(name)
		return name, nil
	}
	if _, ok := s["oneOf"]; ok {
		return "json.RawMessage", nil
	}
	if all, ok := s["allOf"].([]any); ok {
		return g.object(context, s, all)
	}
	t, _ := s["type"].(string)
	switch t {
	case "string":
		if s["format"] == "date-time" {
			return "time.Time", nil
		}
		return "string", nil
	case "integer":
		return "int", nil
	case "number":
		return "float64", nil
	case "boolean":
		return "bool", nil
	case "array":
		items, _ := s["items"].(schema)
		it, err := g.goType(items, context+"Item")
		if err != nil {
			return "", err
		}
		return "[]" + it, nil
	case "object", "":
		props, _ := s["properties"].(schema)
		if len(props) == 0 {
			if ap, ok := s["additionalProperties"].(schema); ok {
				vt, err := g.goType(ap, context+"Value")
				if err != nil {
					return "", err
				}
				return "map[string]" + vt, nil
			}
			return "map[string]any", nil
		}
		return g.object(context, s, nil)
	}
	return "json.RawMessage", nil
}

// isAlias reports whether a component schema is a plain scalar (Id,
// Timestamp) that reads better as its Go type than as a named one; enums
// get a named type.
func isAlias(s schema) bool {
	if _, ok := s["enum"]; ok {
		return false
	}
	t, _ := s["type"].(string)
	switch t {
	case "string", "integer", "number", "boolean":
		return true
	}
	return false
}

// object declares a struct named name for an object schema (with allOf
// members embedded) and returns its name.
func (g *generator) object(name string, s schema, all []any) (string, error) {
	if _, ok := g.types[name]; ok {
		return name, nil
	}
	if reserved[name] {
		return "", fmt.Errorf("gen: schema %s has the name of a hand-written declaration of package client", name)
	}
	g.types[name] = "" // reserve against recursion
	var b strings.Builder
	if d, ok := s["description"].(string); ok {
		writeComment(&b, name+": "+d)
	} else {
		fmt.Fprintf(&b, "// %s is a schema of the API.\n", name)
	}
	fmt.Fprintf(&b, "type %s struct {\n", name)
	for _, m := range all {
		ms, _ := m.(schema)
		if r, ok := ms["$ref"].(string); ok {
			ref, target, ok := g.ref(r)
			if !ok {
				return "", fmt.Errorf("gen: unresolved $ref %q", r)
			}
			_ = target
			g.need(ref)
			fmt.Fprintf(&b, "\t%s\n", ref)
			continue
		}
		if err := g.fields(&b, name, ms); err != nil {
			return "", err
		}
	}
	if err := g.fields(&b, name, s); err != nil {
		return "", err
	}
	b.WriteString("}\n")
	g.types[name] = b.String()
	g.order = append(g.order, name)
	return name, nil
}

func (g *generator) fields(b *strings.Builder, parent string, s schema) error {
	props, _ := s["properties"].(schema)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			required[r.(string)] = true
		}
	}
	for _, p := range keys(props) {
		ps, _ := props[p].(schema)
		inner, null := nullable(ps)
		if len(ps) == 0 {
			// A bare name in allOf's extension (properties: {code: {...}}) with
			// no type: only constraints of a base member; skip.
			continue
		}
		t, err := g.goType(inner, parent+exported(p))
		if err != nil {
			return fmt.Errorf("%s.%s: %w", parent, p, err)
		}
		if inner["type"] == "null" {
			t = "json.RawMessage"
		}
		tag := p
		switch {
		case required[p] && !null:
		case required[p] && null:
			t = pointer(t)
		case !required[p] && null:
			t = "Nullable[" + t + "]"
			tag += ",omitzero"
		default:
			t = pointer(t)
			tag += ",omitempty"
		}
		if d, ok := ps["description"].(string); ok {
			writeComment(b, exported(p)+": "+d)
		}
		fmt.Fprintf(b, "\t%s %s `json:%q`\n", exported(p), t, tag)
	}
	return nil
}

func pointer(t string) string {
	if strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "map[") || t == "json.RawMessage" {
		return t
	}
	return "*" + t
}

func writeComment(b *strings.Builder, text string) {
	text = strings.Join(strings.Fields(text), " ")
	line := "//"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 78 && line != "//" {
			b.WriteString(line + "\n")
			line = "//"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// component declares a component schema by name.
func (g *generator) component(name string) error {
	if reserved[name] {
		return fmt.Errorf("gen: schema %s has the name of a hand-written declaration of package client", name)
	}
	s, _ := g.schemas[name].(schema)
	if enum, ok := s["enum"].([]any); ok {
		var b strings.Builder
		if d, ok := s["description"].(string); ok {
			writeComment(&b, name+": "+d)
		} else {
			fmt.Fprintf(&b, "// %s is an enumeration of the API.\n", name)
		}
		fmt.Fprintf(&b, "type %s string\n\n// Values of %s.\nconst (\n", name, name)
		for _, v := range enum {
			if v == nil {
				continue // a nullable enum's null: a nil pointer in Go, no constant
			}
			fmt.Fprintf(&b, "\t%s%s %s = %q\n", name, exported(strings.ToLower(fmt.Sprint(v))), name, v)
		}
		b.WriteString(")\n")
		g.types[name] = b.String()
		g.order = append(g.order, name)
		return nil
	}
	if _, ok := s["oneOf"]; ok {
		var b strings.Builder
		if d, ok := s["description"].(string); ok {
			writeComment(&b, name+": "+d+" The raw JSON of either form.")
		}
		fmt.Fprintf(&b, "type %s = json.RawMessage\n", name)
		g.types[name] = b.String()
		g.order = append(g.order, name)
		return nil
	}
	all, _ := s["allOf"].([]any)
	_, err := g.object(name, s, all)
	return err
}

// paramSpec is a resolved parameter.
type paramSpec struct {
	name, in string
	required bool
	schema   schema
	desc     string
}

func (g *generator) resolveParams(lists ...any) ([]paramSpec, error) {
	var out []paramSpec
	seen := map[string]bool{}
	for _, l := range lists {
		arr, _ := l.([]any)
		for _, x := range arr {
			p, _ := x.(schema)
			if r, ok := p["$ref"].(string); ok {
				name, _ := strings.CutPrefix(r, "#/components/parameters/")
				p, _ = g.params[name].(schema)
				if p == nil {
					return nil, fmt.Errorf("gen: unresolved parameter %q", r)
				}
			}
			ps := paramSpec{name: p["name"].(string), in: p["in"].(string)}
			ps.required, _ = p["required"].(bool)
			ps.schema, _ = p["schema"].(schema)
			ps.desc, _ = p["description"].(string)
			if seen[ps.in+ps.name] {
				continue
			}
			seen[ps.in+ps.name] = true
			out = append(out, ps)
		}
	}
	return out, nil
}

// receiver is the SDK type an operation belongs to, and its method name.
func receiver(id string) (recv, method string) {
	if rest, ok := strings.CutPrefix(id, "admin"); ok {
		return "Admin", exported(rest)
	}
	return "Client", exported(id)
}

func (g *generator) operation(path, method string, item, op schema) error {
	id, _ := op["operationId"].(string)
	if id == "" {
		return fmt.Errorf("gen: %s %s has no operationId", method, path)
	}
	o := Operation{ID: id, Method: strings.ToUpper(method), Path: path}
	if _, skip := Excluded[id]; skip {
		g.ops = append(g.ops, o)
		return nil
	}
	if _, hand := Handwritten[id]; hand {
		// The hand-written methods use the types of its JSON answers.
		g.ops = append(g.ops, o)
		responses, _ := op["responses"].(schema)
		for _, code := range keys(responses) {
			r, _ := responses[code].(schema)
			content, _ := r["content"].(schema)
			if js, ok := content["application/json"].(schema); ok && strings.HasPrefix(code, "2") {
				rs, _ := js["schema"].(schema)
				if _, err := g.goType(rs, exported(id)+"Response"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	recv, name := receiver(id)
	o.GoMethods = []string{recv + "." + name}
	g.ops = append(g.ops, o)

	params, err := g.resolveParams(item["parameters"], op["parameters"])
	if err != nil {
		return err
	}
	var pathParams, otherParams []paramSpec
	for _, p := range params {
		if p.in == "path" {
			pathParams = append(pathParams, p)
		} else {
			otherParams = append(otherParams, p)
		}
	}
	// Path params in template order.
	sort.SliceStable(pathParams, func(i, j int) bool {
		return strings.Index(path, "{"+pathParams[i].name+"}") < strings.Index(path, "{"+pathParams[j].name+"}")
	})

	// Request body.
	var bodyType string
	bodyRequired, idempotencyKey := false, false
	if rb, ok := op["requestBody"].(schema); ok {
		if r, ok := rb["$ref"].(string); ok {
			name, _ := strings.CutPrefix(r, "#/components/requestBodies/")
			rb, _ = g.bodies[name].(schema)
		}
		bodyRequired, _ = rb["required"].(bool)
		content, _ := rb["content"].(schema)
		js, _ := content["application/json"].(schema)
		bs, _ := js["schema"].(schema)
		if r, _ := bs["$ref"].(string); r != "#/components/schemas/EmptyBody" && bs != nil {
			if bodyType, err = g.goType(bs, exported(id)+"Request"); err != nil {
				return err
			}
			resolved := bs
			if r, ok := bs["$ref"].(string); ok {
				_, resolved, _ = g.ref(r)
			}
			props, _ := resolved["properties"].(schema)
			_, idempotencyKey = props["idempotencyKey"]
		}
	}

	// Success response.
	var outType string
	responses, _ := op["responses"].(schema)
	for _, code := range keys(responses) {
		if !strings.HasPrefix(code, "2") {
			continue
		}
		r, _ := responses[code].(schema)
		if ref, ok := r["$ref"].(string); ok {
			name, _ := strings.CutPrefix(ref, "#/components/responses/")
			comps, _ := g.doc["components"].(schema)
			rs, _ := comps["responses"].(schema)
			r, _ = rs[name].(schema)
		}
		content, _ := r["content"].(schema)
		js, ok := content["application/json"].(schema)
		if !ok {
			return fmt.Errorf("gen: %s answers no JSON; exclude it (gen.Excluded) or write its method by hand (gen.Handwritten)", id)
		}
		rs, _ := js["schema"].(schema)
		if outType, err = g.goType(rs, exported(id)+"Response"); err != nil {
			return err
		}
		break
	}
	if outType == "" {
		return fmt.Errorf("gen: %s has no success response", id)
	}

	var b strings.Builder
	summary, _ := op["summary"].(string)
	scope := ""
	if sec, ok := op["security"].([]any); ok && len(sec) == 1 {
		if req, ok := sec[0].(schema); ok {
			if sc, ok := req["apiKey"].([]any); ok && len(sc) == 1 {
				scope = fmt.Sprint(sc[0])
			}
		}
	}
	where := o.Method + " " + path
	if scope != "" {
		where += ", scope " + scope
	}
	writeComment(&b, fmt.Sprintf("%s: %s (%s).", name, strings.TrimSuffix(summary, "."), where))
	if idempotencyKey {
		b.WriteString("//\n// An idempotencyKey is set when the body has none, so retries return the\n// same resource instead of making another.\n")
	}

	args := []string{"ctx context.Context"}
	for _, p := range pathParams {
		args = append(args, param(p.name)+" string")
	}
	paramsType := ""
	if len(otherParams) > 0 {
		paramsType = exported(id) + "Params"
		if err := g.paramsStruct(paramsType, id, otherParams); err != nil {
			return err
		}
		args = append(args, "params *"+paramsType)
	}
	if bodyType != "" {
		args = append(args, "body "+bodyType)
	}
	fmt.Fprintf(&b, "func (c *%s) %s(%s) (*%s, error) {\n", recv, name, strings.Join(args, ", "), outType)
	// Path.
	pathExpr := strconvPath(path, pathParams)
	fmt.Fprintf(&b, "\tr := request{op: %q, method: %q, path: %s", id, o.Method, pathExpr)
	switch {
	case bodyType != "":
		b.WriteString(", body: &body")
	case op["requestBody"] != nil:
		// Empty body operations send none.
	}
	if idempotencyKey {
		b.WriteString(", idempotent: true")
	}
	b.WriteString("}\n")
	_ = bodyRequired
	if idempotencyKey {
		b.WriteString("\tif body.IdempotencyKey == nil {\n\t\tk := NewIdempotencyKey()\n\t\tbody.IdempotencyKey = &k\n\t}\n")
	}
	if paramsType != "" {
		b.WriteString("\tif params != nil {\n\t\tr.query, r.header = params.values()\n\t}\n")
	}
	fmt.Fprintf(&b, "\tvar out %s\n\tif err := c.do(ctx, r, &out); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &out, nil\n}\n", outType)
	g.methods = append(g.methods, b.String())
	return nil
}

func strconvPath(path string, params []paramSpec) string {
	expr := strconvQuote(path)
	for _, p := range params {
		expr = strings.Replace(expr, "{"+p.name+"}", `" + url.PathEscape(`+param(p.name)+`) + "`, 1)
	}
	return strings.TrimSuffix(expr, ` + ""`)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (g *generator) paramsStruct(name, id string, params []paramSpec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s are the optional parameters of %s.\ntype %s struct {\n", name, id, name)
	type field struct{ goName, wire, in, typ string }
	var fs []field
	for _, p := range params {
		t, err := g.goType(p.schema, name+exported(p.name))
		if err != nil {
			return err
		}
		if p.desc != "" {
			writeComment(&b, exported(p.name)+": "+p.desc)
		}
		f := field{goName: exported(p.name), wire: p.name, in: p.in, typ: t}
		if f.in == "header" {
			f.goName = exported(strings.ToLower(p.name)) + "Header"
		}
		fs = append(fs, f)
		fmt.Fprintf(&b, "\t%s %s\n", f.goName, pointer(t))
	}
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, "func (p *%s) values() (url.Values, http.Header) {\n\tq, h := url.Values{}, http.Header{}\n", name)
	for _, f := range fs {
		target := "q.Add"
		if f.in == "header" {
			target = "h.Set"
		}
		conv := "string(*p." + f.goName + ")"
		switch f.typ {
		case "int":
			conv = "strconv.Itoa(*p." + f.goName + ")"
		case "bool":
			conv = "strconv.FormatBool(*p." + f.goName + ")"
		case "float64":
			conv = "strconv.FormatFloat(*p." + f.goName + ", 'f', -1, 64)"
		case "time.Time":
			conv = "p." + f.goName + ".Format(time.RFC3339Nano)"
		case "string":
			conv = "*p." + f.goName
		}
		if strings.HasPrefix(f.typ, "[]") {
			fmt.Fprintf(&b, "\tfor _, v := range p.%s {\n\t\t%s(%q, string(v))\n\t}\n", f.goName, target, f.wire)
			continue
		}
		fmt.Fprintf(&b, "\tif p.%s != nil {\n\t\t%s(%q, %s)\n\t}\n", f.goName, target, f.wire, conv)
	}
	b.WriteString("\treturn q, h\n}\n")
	g.types[name] = b.String()
	g.order = append(g.order, name)
	return nil
}

// Sorted returns the operation ids, for tests.
func Sorted(ops []Operation) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.ID
	}
	slices.Sort(out)
	return out
}
