package e2e

import (
	"net"
	"os"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// BenchmarkHTTPGetTurnMemory is P1 of issue 16 (make load) without the
// sockets: an authenticated GET /api/v1/turns/{turnId} in memory mode
// through the whole process as `qms serve` builds it (every middleware,
// metrics, the rate limit running, the access log at the default level
// written to /dev/null, so each write(2) the log makes is paid), the turn
// the 51st of 100 waiting, as the load test seeds it. It calls the fiber
// app's handler on a reused fasthttp.RequestCtx, so allocs/op is the
// process's own per request; wrk and the kernel are left out.
func BenchmarkHTTPGetTurnMemory(b *testing.B) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	// Raised out of the way but still running, as make load does.
	a := apptest.Memory(b, apptest.WithProcessLog(devNull),
		apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 1_000_000_000 }))
	var entity, run, turn struct{ ID string }
	a.API("POST", "/entities", map[string]any{"name": "Bench branch"}).Must(201, &entity)
	var q struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	a.API("POST", "/queues", map[string]any{"entityId": entity.ID, "name": "Queue", "type": "TURN"}).Must(201, &q)
	run.ID = q.Runs[0].ID
	for i := range 100 {
		var t struct{ ID string }
		a.API("POST", "/queue-runs/"+run.ID+"/turns", map[string]any{}).Must(201, &t)
		if i == 50 {
			turn = t
		}
	}
	key := a.NewKey(a.AccountID, "turns:read")

	h := a.Fiber.Handler()
	var req fasthttp.Request
	req.Header.SetMethod("GET")
	req.SetRequestURI("/api/v1/turns/" + turn.ID)
	req.Header.Set("X-API-Key", key)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	b.ReportAllocs()
	for b.Loop() {
		// What fasthttp's server does between two requests of a
		// connection: without it, each request's context would wrap the
		// last one's.
		ctx.Response.Reset()
		ctx.ResetUserValues()
		h(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
