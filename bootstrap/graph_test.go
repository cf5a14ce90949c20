package bootstrap

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/modules/retention"
	"github.com/qms-dev/qms/ports"
)

// TestGraphs validates the dependency graph of both adapter sets without
// building anything (no database is opened): a missing or doubly provided
// type, a cycle or a module reading something no one provides fails here,
// in a second, instead of when the e2e suite starts a process.
func TestGraphs(t *testing.T) {
	for _, storage := range []string{config.StorageMemory, config.StoragePostgres} {
		t.Run(storage, func(t *testing.T) {
			env := []string{"QMS_STORAGE=" + storage}
			if storage == config.StoragePostgres {
				env = append(env, "QMS_DATABASE_URL=postgres://qms@127.0.0.1:1/qms", "QMS_WEBHOOKS_SECRET_KEY=graph-test-key-of-at-least-32-characters", "QMS_ADMIN_TOKEN=graph-test-admin-token-0123456789")
			}
			cfg, err := config.Load("", env)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
			if err := fx.ValidateApp(graph(cfg, opts)...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEveryRetentionTaskIsContributed: each kind of record that grows
// without bound has its module's retention task in the application (a
// module that stores one contributes it next to its other wiring;
// modules/retention names none). The modules are the same on both
// backends, whose prune methods the contract suite checks; the memory
// graph is built here, the PostgreSQL one would connect.
func TestEveryRetentionTaskIsContributed(t *testing.T) {
	want := []string{"events", "forwards", "line_changes", "rate_limits", "ticket_links", "webhook_deliveries"}
	for _, storage := range []string{config.StorageMemory} {
		t.Run(storage, func(t *testing.T) {
			env := []string{"QMS_STORAGE=" + storage}
			cfg, err := config.Load("", env)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
			app := fx.New(append(graph(cfg, opts), fx.Invoke(func(tasks retention.Tasks) {
				for _, task := range tasks.Tasks {
					if task.Prune == nil || task.Keep <= 0 {
						t.Errorf("task %s: keep %v, prune set %v", task.Name, task.Keep, task.Prune != nil)
					}
					got = append(got, task.Name)
				}
			}))...)
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("retention tasks %v; want %v", got, want)
			}
		})
	}
}

// hooks are the turns and appointments services' extension points as the
// application fills them.
type hooks struct {
	fx.In
	Guards      []turns.IntakeGuard    `group:"turns.intakeGuards"`
	Followers   []turns.Follower       `group:"turns.followers"`
	Watchers    []turns.Watcher        `group:"turns.watchers"`
	AptWatchers []appointments.Watcher `group:"appointments.watchers"`
}

// TestEveryHookIsContributed: the services are built with the hooks other
// modules contribute (no setter adds one later), so a module that stops
// contributing its hook fails here: notifications watch turns and
// appointments, appointments follow their turns, access codes and the
// notification language guard the intake.
func TestEveryHookIsContributed(t *testing.T) {
	cfg, err := config.Load("", []string{"QMS_STORAGE=" + config.StorageMemory})
	if err != nil {
		t.Fatal(err)
	}
	types := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%T", v))
		}
		slices.Sort(out)
		return out
	}
	var got hooks
	opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
	app := fx.New(append(graph(cfg, opts), fx.Populate(&got))...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"intake guards", types(toAny(got.Guards)...), []string{"*accesscodes.Guard", "notify.languageGuard"}},
		{"turn followers", types(toAny(got.Followers)...), []string{"*appointments.TurnFollower"}},
		{"turn watchers", types(toAny(got.Watchers)...), []string{"notify.watcher"}},
		{"appointment watchers", types(toAny(got.AptWatchers)...), []string{"notify.appointmentWatcher"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s %v; want %v", c.what, c.got, c.want)
		}
	}
}

func toAny[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// Struct tags cannot name constants, so fx.In fields spell their group as
// a literal: every literal group or name tag in the wiring must be one of
// the extension points of package ports.
func TestTagsNameExtensionPoints(t *testing.T) {
	known := map[string]bool{ports.GroupJobs: true, ports.GroupMetrics: true, ports.GroupIntakeGuards: true, ports.GroupTurnFollowers: true, ports.GroupRetention: true,
		ports.GroupTurnWatchers: true, ports.GroupAppointmentWatchers: true,
		ports.NameHTTPMetrics: true}
	tag := regexp.MustCompile("(?:group|name):\"([^\",`+]+)")
	for _, dir := range []string{".", "../modules", "../adapters/http"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range tag.FindAllStringSubmatch(string(b), -1) {
				if !known[m[1]] {
					t.Errorf("%s: fx tag %q is not an extension point of package ports", path, m[0])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
