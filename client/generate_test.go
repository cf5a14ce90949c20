package client_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/client/internal/gen"
)

// TestGeneratedFromTheDocument regenerates the SDK from the OpenAPI
// document the service serves and fails when the committed code differs:
// an endpoint added, removed or changed without `go generate ./client`.
func TestGeneratedFromTheDocument(t *testing.T) {
	doc, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := gen.Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("client/zz_generated.go is not what the OpenAPI document generates: run `go generate ./client` and commit the result")
	}
}
