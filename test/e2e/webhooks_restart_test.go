package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
	"github.com/qms-dev/qms/test/pgtest"
)

// TestWebhooksSurviveARestart stops the server while deliveries are
// pending — some waiting for their retry, some in the middle of a request
// — and starts another on the same database: every delivery arrives, with
// the id it had.
func TestWebhooksSurviveARestart(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var mu sync.Mutex
	phase := 1
	const failing, hanging = 5, 3
	rc := newWhReceiver(t, func(n int, r *http.Request, stop <-chan struct{}) int {
		mu.Lock()
		p := phase
		mu.Unlock()
		switch {
		case p == 2:
			return http.StatusOK
		case n <= failing:
			return http.StatusServiceUnavailable
		default:
			return whHang(n, r, stop)
		}
	})
	a := apptest.PostgresAt(t, url, whNoLimit)
	run := whRun(t, a)
	whEndpoint(t, a, rc.URL(), "queue.closed", "queue.opened")
	ops := []string{"close", "open"}
	for i := 0; i < failing; i++ {
		whToggle(t, a, run, ops[i%2])
	}
	rc.wait(t, failing, 10*time.Second)
	for _, h := range rc.Hits() {
		whLogged(t, a, h.Delivery(), 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "FAILED" && d.NextAttemptAt != nil })
	}
	for i := failing; i < failing+hanging; i++ {
		whToggle(t, a, run, ops[i%2])
	}
	rc.wait(t, failing+hanging, 10*time.Second)
	want := map[string]bool{}
	for _, h := range rc.Hits() {
		want[h.Delivery()] = true
	}
	if len(want) != failing+hanging {
		t.Fatalf("%d distinct deliveries before the restart, want %d", len(want), failing+hanging)
	}

	a.Stop() // with retries due and requests open
	mu.Lock()
	phase = 2
	mu.Unlock()
	stoppedAt := len(rc.Hits())

	b := apptest.PostgresAt(t, url, whNoLimit)
	b.AccountID, b.Key = a.AccountID, a.Key
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]bool{}
		for _, h := range rc.Hits()[stoppedAt:] {
			got[h.Delivery()] = true
		}
		missing := 0
		for id := range want {
			if !got[id] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries never arrived after the restart", missing, len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id := range want {
		whLogged(t, b, id, 5*time.Second, func(d client.WebhookDelivery) bool { return d.Status == "SUCCEEDED" && d.NextAttemptAt == nil })
	}
	if n := len(whLog(t, b)); n != failing+hanging {
		t.Fatalf("the log lists %d deliveries, want %d", n, failing+hanging)
	}
}

// TestWebhookDeliveryInterruptedByACrash kills (SIGKILL) a qms process in
// the middle of a delivery and starts another on the same database: River
// rescues the attempt that was running, and the delivery is sent again,
// with its id, within a minute of the crash. Slow by nature: the rescue
// waits for the stuck-job threshold (20 s) and the rescuer's next pass.
func TestWebhookDeliveryInterruptedByACrash(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	bin := filepath.Join(t.TempDir(), "qms")
	build := exec.Command("go", "build", "-o", bin, "github.com/qms-dev/qms/cmd/qms")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	proc := exec.Command(bin, "serve")
	proc.Env = append(os.Environ(),
		"QMS_STORAGE=postgres", "QMS_DATABASE_URL="+url, "QMS_HTTP_ADDR="+addr,
		"QMS_ADMIN_TOKEN="+apptest.AdminToken, "QMS_WEBHOOKS_SECRET_KEY="+apptest.SecretKey, "QMS_WEBHOOKS_ALLOW_PRIVATE=true",
		"QMS_LOG_LEVEL=error", "QMS_RATELIMIT_PER_MINUTE=100000")
	if os.Getenv("QMS_TEST_LOG") != "" {
		proc.Stderr = os.Stderr
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = proc.Process.Kill()
		}
		_ = proc.Wait()
	})
	waitReady(t, "http://"+addr)

	a := &apptest.App{T: t, BaseURL: "http://" + addr}
	a.AccountID, a.Key = a.NewAccount("premium", "all")
	rc := newWhReceiver(t, func(n int, r *http.Request, stop <-chan struct{}) int {
		if n == 1 {
			return whHang(n, r, stop) // the crash happens during this request
		}
		return http.StatusOK
	})
	run := whRun(t, a)
	whEndpoint(t, a, rc.URL(), "queue.closed")
	whToggle(t, a, run, "close")

	first := rc.wait(t, 1, 10*time.Second)[0]
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	crashedAt := time.Now()

	apptest.PostgresAt(t, url)
	again := rc.wait(t, 2, 90*time.Second-time.Since(crashedAt))[1]
	took := again.At.Sub(crashedAt)
	if again.Delivery() != first.Delivery() || string(again.Body) != string(first.Body) {
		t.Fatalf("after the crash came delivery %s, want %s", again.Delivery(), first.Delivery())
	}
	t.Logf("the interrupted delivery was sent again %v after the crash", took.Round(time.Second))
	if took > time.Minute {
		t.Fatalf("sent again %v after the crash, want within a minute", took)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not become ready in 60s", base)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
