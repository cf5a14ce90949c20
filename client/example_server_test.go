package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/qms-dev/qms/bootstrap"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/accounts"
)

// TestMain gives the examples a qms to talk to: a real process in memory
// mode on a loopback port, whose address and premium key (every scope) are
// in QMS_URL and QMS_API_KEY, as a reader running them would set them. So
// `go test ./client` runs every Example against the server and checks its
// Output.
func TestMain(m *testing.M) {
	stop, err := startExampleServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client examples:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func startExampleServer() (stop func(), err error) {
	const admin = "example-admin-token-0123456789abcdef"
	cfg, err := config.Load("", []string{
		"QMS_STORAGE=memory",
		"QMS_HTTP_ADDR=127.0.0.1:0",
		"QMS_ADMIN_TOKEN=" + admin,
		"QMS_LOG_LEVEL=error",
	})
	if err != nil {
		return nil, err
	}
	cfg.BootstrapDemo = false
	app, srv := bootstrap.New(cfg, bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout: io.Discard,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return nil, fmt.Errorf("start qms: %w", err)
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = app.Stop(ctx)
	}
	base := "http://" + srv.Addr
	var acc struct{ ID string }
	if err := adminPost(base+"/admin/v1/accounts", admin, map[string]any{"name": "Examples", "plan": "premium"}, &acc); err != nil {
		stop()
		return nil, err
	}
	var key struct{ Key string }
	if err := adminPost(base+"/admin/v1/accounts/"+acc.ID+"/api-keys", admin, map[string]any{"name": "examples", "scopes": accounts.AllScopeNames()}, &key); err != nil {
		stop()
		return nil, err
	}
	os.Setenv("QMS_URL", base)
	os.Setenv("QMS_API_KEY", key.Key)
	return stop, nil
}

func adminPost(url, token string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}
