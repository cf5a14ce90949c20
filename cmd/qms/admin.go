package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/accounts"
)

// admin drives the admin API of a running qms over HTTP, so the same
// commands work in memory and postgres mode and go through the same rules
// as the API.
func admin(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" {
		fmt.Fprint(stdout, `usage: qms admin <subcommand> [flags]

  create-account --name NAME [--plan premium|free]
  set-plan       --account ID --plan premium|free
  create-key     --account ID --scopes queues:write,turns:read,... [--name NAME]
                 (--scopes all gives every scope)
  list-keys      --account ID
  revoke-key     --key ID

common flags: --url (default $QMS_URL or http://localhost:8080)
              --token (default $QMS_ADMIN_TOKEN)
`)
		return nil
	}
	fs := flag.NewFlagSet("admin "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", envOr("QMS_URL", "http://localhost:8080"), "base URL of the running service")
	token := fs.String("token", os.Getenv("QMS_ADMIN_TOKEN"), "admin token")
	name := fs.String("name", "", "name")
	plan := fs.String("plan", "premium", "plan: premium or free")
	account := fs.String("account", "", "account id")
	scopes := fs.String("scopes", "", "comma-separated scopes, or all")
	key := fs.String("key", "", "API key id")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var method, path string
	var body any
	switch args[0] {
	case "create-account":
		method, path, body = http.MethodPost, "/admin/v1/accounts", map[string]any{"name": *name, "plan": *plan}
	case "set-plan":
		method, path, body = http.MethodPut, "/admin/v1/accounts/"+*account+"/plan", map[string]any{"plan": *plan}
	case "create-key":
		list := strings.Split(*scopes, ",")
		if *scopes == "all" {
			list = accounts.AllScopeNames()
		}
		method, path, body = http.MethodPost, "/admin/v1/accounts/"+*account+"/api-keys", map[string]any{"name": *name, "scopes": list}
	case "list-keys":
		method, path = http.MethodGet, "/admin/v1/accounts/"+*account+"/api-keys"
	case "revoke-key":
		method, path = http.MethodPost, "/admin/v1/api-keys/"+*key+"/revoke"
	default:
		return fmt.Errorf("admin: unknown subcommand %q (qms admin help)", args[0])
	}
	return call(stdout, method, strings.TrimRight(*base, "/")+path, *token, body)
}

func call(stdout io.Writer, method, url, token string, body any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Fprintln(stdout, string(out))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("admin: %s", resp.Status)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
