// Package bootstrap assembles a qms process with fx: it picks the adapter
// set named by the configuration (memory or postgres), provides the shared
// platform (clock, event bus, job runner, HTTP server) and adds one fx module
// per business module.
package bootstrap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/qms-dev/qms/adapters/http/server"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/modules/accesscodes"
	"github.com/qms-dev/qms/modules/accounts"
	"github.com/qms-dev/qms/modules/analytics"
	"github.com/qms-dev/qms/modules/appointments"
	"github.com/qms-dev/qms/modules/counter"
	"github.com/qms-dev/qms/modules/display"
	"github.com/qms-dev/qms/modules/entities"
	"github.com/qms-dev/qms/modules/join"
	"github.com/qms-dev/qms/modules/metrics"
	"github.com/qms-dev/qms/modules/notify"
	"github.com/qms-dev/qms/modules/queues"
	"github.com/qms-dev/qms/modules/retention"
	"github.com/qms-dev/qms/modules/stream"
	"github.com/qms-dev/qms/modules/ticket"
	"github.com/qms-dev/qms/modules/turns"
	"github.com/qms-dev/qms/modules/webhooks"
	"github.com/qms-dev/qms/modules/workflow"
	"github.com/qms-dev/qms/ports"
)

// Options configure New beyond the config file.
type Options struct {
	// Clock overrides the wall clock (tests).
	Clock platform.Clock
	// Stdout receives the start-up banner of memory mode.
	Stdout io.Writer
	// Logger overrides the JSON logger on stderr.
	Logger *slog.Logger
	// LogOutput is where the process's own logger writes when Logger is
	// nil; nil means os.Stderr.
	LogOutput io.Writer
	// DBTracer, when set, sees every statement sent to PostgreSQL (tests
	// count round trips per request with it).
	DBTracer pgx.QueryTracer
}

// Modules lists the business modules. A new module is a line here, plus
// its repository port in each adapter set (storage.go) and its routes'
// OpenAPI fragment; it contributes jobs, metrics or intake guards through
// the extension points of package ports, never by importing a module.
var Modules = []fx.Option{
	accounts.Module,
	entities.Module,
	queues.Module,
	turns.Module,
	accesscodes.Module,
	workflow.Module,
	analytics.Module,
	webhooks.Module,
	appointments.Module,
	metrics.Module,
	stream.Module,
	display.Module,
	ticket.Module,
	join.Module,
	counter.Module,
	retention.Module,
	notify.Module,
}

// New builds the application for cfg. Start it with app.Start and stop it
// with app.Stop; Server is filled once it has started.
func New(cfg *config.Config, opts Options) (*fx.App, *server.Server) {
	var srv *server.Server
	app := fx.New(append(graph(cfg, opts), fx.Invoke(func(s *server.Server) { srv = s }))...)
	return app, srv
}

// graph is the application's fx options for cfg: the adapter set it names,
// the platform and every module. TestGraphs validates it for both sets.
func graph(cfg *config.Config, opts Options) []fx.Option {
	log := opts.Logger
	var logBuf *logBuffer
	if log == nil {
		out := opts.LogOutput
		if out == nil {
			out = os.Stderr
		}
		logBuf = newLogBuffer(out, logFlushInterval, logFlushSize)
		log = processLogger(cfg, logBuf)
	}
	clock := opts.Clock
	if clock == nil {
		clock = platform.SystemClock{}
	}
	stdout := opts.Stdout
	if stdout == nil {
		stdout = os.Stdout
	}
	token := cfg.Admin.Token
	generated := false
	if token == "" {
		token = "qms_admin_" + randomHex(24)
		generated = true
	}
	return []fx.Option{
		// The first module, so its invoke is the first to run (fx runs
		// modules' invokes before the root's) and its stop hook the last:
		// the log buffer is flushed after every other component has
		// stopped, or after a failed start has been rolled back.
		fx.Module("log", fx.Invoke(func(lc fx.Lifecycle) {
			if logBuf != nil {
				lc.Append(fx.StopHook(logBuf.Close))
			}
			// A QMS_ variable that names no setting is ignored: say so,
			// since it is most likely a typo of one that was meant.
			for _, name := range cfg.UnknownEnv {
				log.Warn("config: unknown environment variable, ignored (no such setting in configs/default.yaml)", "variable", name)
			}
		})),
		fx.WithLogger(func() fxevent.Logger {
			// fx's own start-up chatter is debug detail; its errors stay errors.
			l := &fxevent.SlogLogger{Logger: log.With("component", "fx")}
			l.UseLogLevel(slog.LevelDebug)
			return quietStartup{l}
		}),
		fx.Supply(cfg, log, server.AdminToken(token), dbTracer{opts.DBTracer}),
		fx.Provide(
			func() platform.Clock { return clock },
			fx.Annotate(events.NewBus, fx.As(fx.Self()), fx.As(new(platform.EventSink))),
			server.New,
			fx.Annotate(rateLimitsRetention, fx.ResultTags(ports.InGroup(ports.GroupRetention))),
		),
		storage(cfg),
		fx.Options(Modules...),
		fx.Invoke(func(lc fx.Lifecycle, d demoDeps) {
			if cfg.Storage != config.StorageMemory || !cfg.BootstrapDemo {
				return
			}
			lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
				return printDemo(ctx, stdout, d, token, generated)
			}})
		}),
		fx.StartTimeout(60 * time.Second),
		fx.StopTimeout(cfg.HTTP.ShutdownTimeout + 5*time.Second),
	}
}

// rateLimitsRetention prunes the rate limiter's windows of keys idle for
// retention.rate_limits: the server's limiter, which no module owns.
func rateLimitsRetention(cfg *config.Config, lim ports.RateLimiter) ports.RetentionTask {
	return ports.RetentionTask{Name: "rate_limits", Keep: cfg.Retention.RateLimits, Prune: lim.PruneRateLimits}
}

// processLogger is NewLogger's logger writing to the process's log
// buffer, flushed after every error, and writing the access lines itself
// when its handler is the plain JSON one.
func processLogger(cfg *config.Config, buf *logBuffer) *slog.Logger {
	h := NewLogger(cfg, buf).Handler()
	if _, plain := h.(*slog.JSONHandler); plain {
		h = accessLines{h, buf}
	}
	return slog.New(flushOnError{h, buf})
}

// NewLogger builds the process logger from the log settings.
//
// The JSON handler must keep slog's default options: the process writes
// its access lines in that handler's bytes without it (accessLines,
// TestAccessLinesAsTheProcessLogger).
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	o := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "text" {
		return slog.New(slog.NewTextHandler(w, o))
	}
	return slog.New(slog.NewJSONHandler(w, o))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("bootstrap: no randomness: %v", err))
	}
	return hex.EncodeToString(b)
}
