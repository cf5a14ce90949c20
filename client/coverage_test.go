package client_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/client/internal/gen"
)

// TestEveryOperationHasAMethod walks the OpenAPI document: every operation
// has an SDK method that exists (or is left out on purpose, with its
// reason), and every SDK method calls an operation of the document.
func TestEveryOperationHasAMethod(t *testing.T) {
	raw, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]string{} // operationId -> "METHOD path"
	for path, item := range doc.Paths {
		for method, op := range item {
			var o struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(op, &o) == nil && o.OperationID != "" {
				inDoc[o.OperationID] = strings.ToUpper(method) + " " + path
			}
		}
	}
	types := map[string]reflect.Type{"Client": reflect.TypeFor[*client.Client](), "Admin": reflect.TypeFor[*client.Admin]()}
	sdk := map[string]client.Operation{}
	called := map[string]bool{}
	for _, op := range client.Operations() {
		sdk[op.ID] = op
		where, ok := inDoc[op.ID]
		if !ok {
			t.Errorf("the SDK calls %s, which the document does not have", op.ID)
			continue
		}
		if where != op.Method+" "+op.Path {
			t.Errorf("%s: the SDK calls %s %s, the document says %s", op.ID, op.Method, op.Path, where)
		}
		if len(op.GoMethods) == 0 {
			if gen.Excluded[op.ID] == "" {
				t.Errorf("%s has no SDK method and no reason to be left out", op.ID)
			}
			continue
		}
		for _, m := range op.GoMethods {
			recv, name, _ := strings.Cut(m, ".")
			typ, ok := types[recv]
			if !ok {
				t.Errorf("%s: method %s on an unknown type", op.ID, m)
				continue
			}
			if _, ok := typ.MethodByName(name); !ok {
				t.Errorf("%s: the SDK has no method %s", op.ID, m)
			}
			called[m] = true
		}
	}
	var missing []string
	for id := range inDoc {
		if _, ok := sdk[id]; !ok {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	for _, id := range missing {
		t.Errorf("the document's operation %s (%s) has no SDK method: run `go generate ./client`", id, inDoc[id])
	}
	// Every exported method of Client and Admin calls an operation.
	for recv, typ := range types {
		for i := 0; i < typ.NumMethod(); i++ {
			m := recv + "." + typ.Method(i).Name
			if !called[m] {
				t.Errorf("%s calls no operation of the document", m)
			}
		}
	}
	covered := 0
	for _, op := range sdk {
		if len(op.GoMethods) > 0 {
			covered++
		}
	}
	t.Logf("%d operations in the document, %d with SDK methods, %d left out (%v)", len(inDoc), covered, len(gen.Excluded), gen.Excluded)
}
