package history

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// backend is what the workload runs against: one or more processes sharing
// one store, and a premium key with every scope.
type backend struct {
	name string
	urls []string
	key  string
	// logs are the files holding the processes' output (cluster only).
	logs []string
}

// highRate keeps the per-key rate limit (120/min by default, shared by the
// processes through the database) and the budgets of the customer's pages
// (join and ticket) out of the way of the load.
const highRate = 10_000_000

// memoryBackend is the memory adapter in process.
func memoryBackend(t *testing.T) *backend {
	a := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute, c.RateLimit.PerTokenPerMinute = highRate, highRate
		c.Join.PerAddressPerMinute, c.Join.PerLinkPerMinute = highRate, highRate
	}))
	return &backend{name: "memory", urls: []string{a.BaseURL}, key: a.Key}
}

// qmsBinary builds cmd/qms into dir: the cluster runs the binary users
// run, not the code linked into the test.
func qmsBinary(dir string) (string, error) {
	path := filepath.Join(dir, "qms")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/qms")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/qms: %v\n%s", err, out)
	}
	return path, nil
}

// clusterBackend starts n `qms serve` processes on one fresh database. Their output is kept in files (their directory is
// printed) so that deadlocks the clients never saw can still be counted.
func clusterBackend(t *testing.T, n int) *backend {
	dbURL := pgtest.URL(t) // skips, or fails with CI=true, when there is no server
	// Removed after the processes are stopped (cleanups run last first).
	bin, err := qmsBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logDir, err := os.MkdirTemp("", "qms-history-logs-")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"QMS_STORAGE=postgres",
		"QMS_DATABASE_URL="+dbURL,
		"QMS_ADMIN_TOKEN="+apptest.AdminToken,
		"QMS_WEBHOOKS_SECRET_KEY="+apptest.SecretKey,
		fmt.Sprintf("QMS_RATELIMIT_PER_MINUTE=%d", highRate),
		// The customer's pages too: one client address joins and asks for
		// help for a whole waiting room.
		fmt.Sprintf("QMS_RATELIMIT_PER_TOKEN_PER_MINUTE=%d", highRate),
		fmt.Sprintf("QMS_JOIN_PER_ADDRESS_PER_MINUTE=%d", highRate),
		fmt.Sprintf("QMS_JOIN_PER_LINK_PER_MINUTE=%d", highRate),
		"QMS_WEBHOOKS_ALLOW_PRIVATE=true",
		"QMS_BOOTSTRAP_DEMO=false",
		"QMS_LOG_LEVEL=warn",
	)
	migrate := exec.Command(bin, "migrate")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("qms migrate: %v\n%s", err, out)
	}
	b := &backend{name: "postgres-cluster"}
	for i := range n {
		addr := freeAddr(t)
		logPath := filepath.Join(logDir, fmt.Sprintf("qms-%d.log", i))
		f, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", "--no-migrate")
		cmd.Env = append(env, "QMS_HTTP_ADDR="+addr)
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Registered after pgtest's drop of the database, so it runs first.
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			f.Close()
		})
		b.urls = append(b.urls, "http://"+addr)
		b.logs = append(b.logs, logPath)
	}
	for _, u := range b.urls {
		waitReady(t, u)
	}
	a := &apptest.App{T: t, BaseURL: b.urls[0]}
	_, b.key = a.NewAccount("premium", "all")
	t.Logf("%s: %d processes, logs in %s", b.name, n, logDir)
	return b
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(t *testing.T, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/readyz did not answer 200 in time (last error %v)", base, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logCounts counts the lines of the processes' logs that mention a
// deadlock, a unit of work run again after a conflict (40001 or 40P01,
// which the server hides from the client), or a 5xx answer.
type logCounts struct{ deadlock, sqlstate40P01, retried, status5xx, lines int }

func countLogs(paths []string) (logCounts, error) {
	var c logCounts
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return c, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			c.lines++
			if strings.Contains(line, "deadlock detected") {
				c.deadlock++
			}
			if strings.Contains(line, "40P01") {
				c.sqlstate40P01++
			}
			if strings.Contains(line, "retryable conflict") {
				c.retried++
			}
			if strings.Contains(line, `"msg":"http request"`) && strings.Contains(line, `"status":5`) {
				c.status5xx++
			}
		}
		f.Close()
	}
	return c, nil
}

// sumMetric adds up an unlabelled counter over the processes' GET /metrics
// (on the API's listener, the default).
func sumMetric(urls []string, name string) (int64, error) {
	var sum int64
	for _, u := range urls {
		resp, err := http.Get(u + "/metrics")
		if err != nil {
			return 0, fmt.Errorf("history: metrics of %s: %w", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("history: metrics of %s: %w", u, err)
		}
		found := false
		for line := range strings.Lines(string(body)) {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" ")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("history: %s of %s: %w", name, u, err)
			}
			sum += int64(f)
			found = true
		}
		if !found {
			return 0, fmt.Errorf("history: %s has no %s", u, name)
		}
	}
	return sum, nil
}
