package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestContainerImage builds the image of the Containerfile with podman (a
// static qms built here, copied FROM scratch: nothing is pulled), runs it
// against a fresh database of the local PostgreSQL, takes a turn through
// it, and stops it; it reports the image's size and the time to ready.
//
// podman runs with the recipe these machines need: a containers.conf with
// no default ulimits (CONTAINERS_CONF), the vfs storage driver in a storage
// root of the test's own, runc and the host's network. Without podman the test skips, except under CI=true.
func TestContainerImage(t *testing.T) {
	podman := lookTool(t, "podman")
	goTool := lookTool(t, "go")
	work := t.TempDir()
	conf := filepath.Join(work, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A storage root and run root of the test's own: an image store that
	// `make image` or anything else made with another driver (overlay, say)
	// never meets this one's vfs ("database storage graph driver does not
	// match"), and the test leaves nothing behind.
	store := []string{"--storage-driver", "vfs", "--root", filepath.Join(work, "storage"), "--runroot", filepath.Join(work, "run")}
	pod := func(args ...string) *exec.Cmd {
		cmd := exec.Command(podman, append(append([]string{}, store...), args...)...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		return cmd
	}
	must := func(cmd *exec.Cmd) string {
		t.Helper()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}

	// The binary, as make image builds it.
	stamp := fmt.Sprintf("-s -w -X main.version=e2e -X main.commit=container-test -X main.date=%s", time.Now().UTC().Format(time.RFC3339))
	build := exec.Command(goTool, "build", "-trimpath", "-ldflags", stamp, "-o", filepath.Join(work, "context", "qms"), "github.com/qms-dev/qms/cmd/qms")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	must(build)

	tag := fmt.Sprintf("localhost/qms-e2e:%d", time.Now().UnixNano())
	t0 := time.Now()
	must(pod("build", "--layers=false", "--format", "docker", "-f", filepath.Join("..", "..", "Containerfile"), "--build-arg", "VERSION=e2e", "-t", tag, filepath.Join(work, "context")))
	buildTook := time.Since(t0)
	t.Cleanup(func() { _ = pod("rmi", "-f", tag).Run() })
	size, _ := strconv.ParseInt(must(pod("image", "inspect", "--format", "{{.Size}}", tag)), 10, 64)
	if user := must(pod("image", "inspect", "--format", "{{.Config.User}}", tag)); user == "" || user == "0" || strings.HasPrefix(user, "root") {
		t.Errorf("the image runs as %q, want a non-root user", user)
	}
	if v := must(pod("run", "--rm", "--runtime", "runc", "--network", "host", tag, "version")); !strings.Contains(v, "qms e2e (commit container-test, built ") {
		t.Errorf("qms version in the image: %q", v)
	}

	// A fresh, empty database: qms serve migrates it at start-up.
	dbURL := pgtest.EmptyURL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	name := strings.NewReplacer("localhost/", "", ":", "-").Replace(tag)
	t1 := time.Now()
	must(pod("run", "-d", "--name", name, "--runtime", "runc", "--network", "host",
		"-e", "QMS_STORAGE=postgres", "-e", "QMS_DATABASE_URL="+dbURL,
		"-e", "QMS_ADMIN_TOKEN="+apptest.AdminToken, "-e", "QMS_WEBHOOKS_SECRET_KEY="+apptest.SecretKey, "-e", "QMS_HTTP_ADDR="+addr,
		"-e", "QMS_WEBHOOKS_ALLOW_PRIVATE=true", tag))
	t.Cleanup(func() { _ = pod("rm", "-f", name).Run() })
	base := "http://" + addr
	ready := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = true
				break
			}
		}
	}
	startTook := time.Since(t1)
	if !ready {
		logs, _ := pod("logs", name).CombinedOutput()
		t.Fatalf("the container was not ready within 60s:\n%s", logs)
	}
	if out, err := pod("exec", name, "/usr/local/bin/qms", "health").CombinedOutput(); err != nil {
		t.Errorf("qms health in the container: %v %s", err, out)
	}

	// A turn through it, with responses checked against the document.
	a := &apptest.App{T: t, BaseURL: base}
	a.AccountID, a.Key = a.NewAccount("premium", "all")
	run := whRun(t, a)
	var turn struct{ ID, Status, DisplayCode string }
	a.API(http.MethodPost, "/queue-runs/"+run+"/turns", nil).Must(http.StatusCreated, &turn)
	var called struct{ ID, Status string }
	a.API(http.MethodPost, "/queue-runs/"+run+"/dispatch/next", nil).Must(http.StatusCreated, &called)
	if called.ID != turn.ID || called.Status != "CALLED" {
		t.Fatalf("took turn %s (%s), next called %s (%s)", turn.ID, turn.DisplayCode, called.ID, called.Status)
	}

	t2 := time.Now()
	must(pod("stop", "-t", "20", name))
	stopTook := time.Since(t2)
	if code := must(pod("inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
		logs, _ := pod("logs", name).CombinedOutput()
		t.Errorf("qms exited %s on SIGTERM:\n%s", code, logs)
	}
	t.Logf("image %s: %.1f MB, built in %v; ready (fresh database, migrations included) %v after podman run; stopped in %v",
		tag, float64(size)/1e6, buildTook.Round(10*time.Millisecond), startTook.Round(10*time.Millisecond), stopTook.Round(10*time.Millisecond))
}

// TestComposeFile checks compose.yaml without running it (its postgres
// image cannot be pulled here): PostgreSQL 15 with a health check and a
// volume, qms from the image of make image, started once PostgreSQL is
// healthy (restarting until it is where the tool ignores that), checked by
// the image's own health check, and an environment that qms
// accepts as a postgres-mode configuration.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Image       string
		Restart     string
		Environment map[string]string
		Volumes     []string
		DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
		Healthcheck struct{ Test []string }
	}
	var c struct {
		Services map[string]service
		Volumes  map[string]any
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	pg, q := c.Services["postgres"], c.Services["qms"]
	if !strings.HasSuffix(pg.Image, "postgres:15") || len(pg.Healthcheck.Test) == 0 {
		t.Errorf("postgres service: %+v", pg)
	}
	if len(pg.Volumes) != 1 {
		t.Errorf("postgres volumes: %v", pg.Volumes)
	} else if name, dir, _ := strings.Cut(pg.Volumes[0], ":"); dir != "/var/lib/postgresql/data" {
		t.Errorf("postgres keeps its data in %s, not in the volume %s", dir, name)
	} else if _, ok := c.Volumes[name]; !ok {
		t.Errorf("the volume %s is not declared", name)
	}
	// qms waits for a healthy PostgreSQL where the tool can, and restarts
	// until it answers where it cannot (old podman-compose); its health
	// check is the image's exec-form HEALTHCHECK, never one written in the
	// file, which podman-compose 1.0.3 would run through a /bin/sh the
	// scratch image lacks.
	if q.Image != "localhost/qms:latest" || q.DependsOn["postgres"].Condition != "service_healthy" ||
		q.Restart != "unless-stopped" || len(q.Healthcheck.Test) != 0 {
		t.Errorf("qms service: %+v", q)
	}
	containerfile, err := os.ReadFile(filepath.Join("..", "..", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(containerfile), `CMD ["/usr/local/bin/qms", "health"]`) {
		t.Error("the Containerfile's HEALTHCHECK is not the exec form of qms health")
	}
	// ${VAR:-default} and ${VAR:?message} as compose would fill them.
	fill := strings.NewReplacer("${POSTGRES_PASSWORD:-qms}", "qms",
		"${QMS_ADMIN_TOKEN:?set QMS_ADMIN_TOKEN (16+ characters)}", "0123456789abcdef0123",
		"${QMS_WEBHOOKS_SECRET_KEY:?set QMS_WEBHOOKS_SECRET_KEY (32+ characters)}", strings.Repeat("k", 32))
	var env []string
	for k, v := range q.Environment {
		env = append(env, k+"="+fill.Replace(v))
	}
	cfg, err := config.Load("", env)
	if err != nil {
		t.Fatalf("qms refuses the compose file's environment: %v", err)
	}
	if cfg.Storage != config.StoragePostgres || !strings.Contains(cfg.Database.URL, "@postgres:5432/") {
		t.Errorf("compose configuration: storage %s, database %s", cfg.Storage, cfg.Database.URL)
	}
}
