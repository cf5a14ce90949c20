// Package stream wires the live event stream: the hub of this process, the
// notifier that wakes it (from the storage in use), GET
// /api/v1/events/stream, and the qms_stream_subscribers gauge.
package stream

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/adapters/http/streamhttp"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	core "github.com/qms-dev/qms/core/stream"
	"github.com/qms-dev/qms/ports"
)

// Module provides *stream.Hub and mounts the stream. The storage provides
// core.Log and core.Notifier.
var Module = fx.Module("stream",
	fx.Provide(
		newHub,
		fx.Annotate(subscribersGauge, fx.ResultTags(ports.InGroup(ports.GroupMetrics))),
		fx.Annotate(eventsRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
	),
	fx.Invoke(func(srv *server.Server, hub *core.Hub, qs *queues.Service) {
		streamhttp.Register(srv.API, hub, qs, srv.Cursors, streamhttp.SSE{})
	}),
)

// eventsRetention prunes the event log after retention.events: the log is
// what the stream replays (the setting may not be shorter than the
// stream's replay window, configs/config), and the webhooks' deliveries
// carry their own copy of the body.
func eventsRetention(cfg *config.Config, log events.Store) ports.RetentionTask {
	return ports.RetentionTask{Name: "events", Keep: cfg.Retention.Events, Prune: log.PruneEvents}
}

// newHub builds the hub and runs it with the application: it listens from
// start-up, and closes (ending every open stream with a shutdown event)
// before the web server shuts down, which would otherwise wait for the
// streams until its timeout.
func newHub(lc fx.Lifecycle, log core.Log, n core.Notifier, clock platform.Clock, l *slog.Logger) *core.Hub {
	hub := core.NewHub(log, clock, core.Options{Logger: l.With("component", "stream")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() { defer close(done); hub.Listen(ctx, n) }()
			return nil
		},
		OnStop: func(context.Context) error {
			hub.Close()
			cancel()
			<-done
			return nil
		},
	})
	return hub
}

func subscribersGauge(hub *core.Hub) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "qms", Subsystem: "stream", Name: "subscribers",
		Help: "Open event-stream subscriptions of this process (API streams and display boards).",
	}, func() float64 { return float64(hub.Subscribers()) })
}
