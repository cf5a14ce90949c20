package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestPlainSecretsSealedAtStart (issue 14): a signing secret an earlier
// version stored in clear is sealed by the first process that starts with a
// key, and its endpoint keeps its secret.
func TestPlainSecretsSealedAtStart(t *testing.T) {
	url := pgtest.URL(t)
	// A process of the old kind: no key (bypassing the configuration's check).
	old := apptest.PostgresAt(t, url, apptest.WithConfig(func(c *config.Config) { c.Webhooks.SecretKey = "" }))
	var ep struct{ ID, Secret string }
	old.API(http.MethodPost, "/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"queue.closed"}}).
		Must(http.StatusCreated, &ep)
	old.Stop()

	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := func() string {
		var s string
		if err := db.Pool.QueryRow(context.Background(), "SELECT secret FROM webhook_endpoints WHERE id = $1", ep.ID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := stored(); s != "plain:"+ep.Secret {
		t.Fatalf("the old process stored %q", s)
	}

	apptest.PostgresAt(t, url) // has a key
	s := stored()
	if !strings.HasPrefix(s, "v1:") || strings.Contains(s, ep.Secret[6:]) {
		t.Fatalf("not sealed at start-up: %q", s)
	}
	r, _ := postgres.NewWebhooks(db, apptest.SecretKey)
	if got, err := r.GetEndpoint(context.Background(), ep.ID); err != nil || got.Secret.Reveal() != ep.Secret {
		t.Fatalf("the sealed secret does not open to the same one: %v", err)
	}
}
