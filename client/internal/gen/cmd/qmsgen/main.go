// Command qmsgen writes the SDK's zz_generated.go from the OpenAPI
// document the service embeds (adapters/http/openapi). Run it with
// `go generate ./client` after changing the API.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/qms-dev/qms/adapters/http/openapi"
	"github.com/qms-dev/qms/client/internal/gen"
)

func main() {
	out := flag.String("o", "zz_generated.go", "the file to write")
	flag.Parse()
	doc, err := openapi.Document()
	if err != nil {
		fmt.Fprintln(os.Stderr, "qmsgen:", err)
		os.Exit(1)
	}
	src, ops, err := gen.Generate(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "qmsgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "qmsgen:", err)
		os.Exit(1)
	}
	fmt.Printf("qmsgen: %d operations, %d bytes\n", len(ops), len(src))
}
