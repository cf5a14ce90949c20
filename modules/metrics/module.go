// Package metrics wires the Prometheus metrics of a process: the registry,
// the request middleware the web server mounts, the collectors of the
// storage in use, and GET /metrics, on the API's listener or on its own
// (metrics.addr, QMS_METRICS_ADDR).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/metrics"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/ports"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Module provides *metrics.Metrics (also as ports.DeliveryObserver) and the
// web server's request middleware, registers every prometheus.Collector
// contributed to the "metrics" value group, and serves Path.
//
// Other modules add collectors with
//
//	fx.Provide(fx.Annotate(newCollector, fx.ResultTags(ports.InGroup(ports.GroupMetrics))))
//
// where newCollector returns a prometheus.Collector.
var Module = fx.Module("metrics",
	fx.Provide(
		metrics.New,
		func(m *metrics.Metrics) ports.DeliveryObserver { return m },
		fx.Annotate(func(m *metrics.Metrics) fiber.Handler { return m.Middleware() }, fx.ResultTags(ports.Named(ports.NameHTTPMetrics))),
	),
	fx.Invoke(register, serve),
)

type collectors struct {
	fx.In
	Metrics    *metrics.Metrics
	Collectors []prometheus.Collector `group:"metrics"`
}

// register adds the collectors other modules and the adapter set
// contribute (ports.GroupMetrics; in postgres mode the pool's and River's
// jobs').
func register(in collectors) {
	for _, c := range in.Collectors {
		if c != nil {
			in.Metrics.Register(c)
		}
	}
}

// serve mounts GET /metrics on the API's app, or, when metrics.addr is set,
// on a listener of its own that starts and stops with the application.
func serve(lc fx.Lifecycle, cfg *config.Config, srv *server.Server, m *metrics.Metrics, log *slog.Logger) {
	if cfg.Metrics.Addr == "" {
		srv.App.Get(Path, m.Handler())
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, m.HTTPHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.Metrics.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s (QMS_METRICS_ADDR): %w", cfg.Metrics.Addr, err)
			}
			go func() {
				if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("metrics server stopped", "err", err)
				}
			}()
			log.Info("metrics listening", "addr", ln.Addr().String())
			return nil
		},
		OnStop: hs.Shutdown,
	})
}
