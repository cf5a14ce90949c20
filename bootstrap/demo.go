package bootstrap

import (
	"context"
	"fmt"
	"io"
	"strings"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/core/accounts"
)

type demoDeps struct {
	fx.In
	Accounts *accounts.Service
	Server   *server.Server
}

// printDemo makes memory mode usable at once: a premium account, a key with
// every scope, and a curl line to paste.
func printDemo(ctx context.Context, w io.Writer, d demoDeps, token string, generated bool) error {
	acc, err := d.Accounts.CreateAccount(ctx, accounts.CreateAccountInput{Name: "Demo account", Plan: accounts.PlanPremium})
	if err != nil {
		return fmt.Errorf("demo account: %w", err)
	}
	_, key, err := d.Accounts.CreateKey(ctx, acc.ID, accounts.CreateKeyInput{Name: "demo", Scopes: accounts.AllScopeNames()})
	if err != nil {
		return fmt.Errorf("demo key: %w", err)
	}
	base := "http://" + strings.Replace(d.Server.Addr, "[::]", "localhost", 1)
	tokenNote := "(from QMS_ADMIN_TOKEN)"
	if generated {
		tokenNote = "(generated for this run; set QMS_ADMIN_TOKEN to choose one)"
	}
	fmt.Fprintf(w, `
qms is running in memory mode (nothing is kept after it stops).

  API          %[1]s/api/v1   (OpenAPI: %[1]s/api/v1/openapi.json)
  admin token  %[2]s %[3]s
  account      %[4]s (premium)
  API key      %[5]s (every scope)

Try it:
  curl -s -H 'X-API-Key: %[5]s' %[1]s/api/v1/entities

The README's walkthrough (a queue, a turn, a served customer) starts with, in another terminal:
  export QMS=%[1]s KEY=%[5]s

`, base, token, tokenNote, acc.ID, key)
	return nil
}
