// Command qms is the queue management service: `qms serve` runs it, `qms
// migrate` prepares its database, `qms admin ...` manages accounts and API
// keys, `qms version` tells which build this is.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // queue time zones must resolve on machines without tzdata

	// Webhook URLs are HTTPS: when the system has no CA roots (the
	// container image is FROM scratch), Mozilla's, embedded, are used.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/bootstrap"
	"github.com/qms-dev/qms/configs/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "migrate":
		err = migrate(args[1:], stderr)
	case "admin":
		err = admin(args[1:], stdout, stderr)
	case "health":
		err = health(args[1:], stdout, stderr)
	case "reseal-secrets":
		err = resealSecrets(args[1:], stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, currentVersion())
	case "help", "-h", "--help":
		usage(stdout)
	default:
		fmt.Fprintf(stderr, "qms: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "qms:", err)
		}
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: qms <command> [flags]

commands:
  serve    [--config FILE] [--set KEY=VALUE]... [--no-migrate]
                                            run the service
  migrate  [--config FILE]                  apply the app's and River's migrations (postgres mode)
  admin    <subcommand>                     manage accounts and API keys (qms admin help)
  health   [--url URL]                      exit 0 when the local qms answers /readyz (container health checks)
  reseal-secrets [--config FILE]            seal every webhook signing secret under QMS_WEBHOOKS_SECRET_KEY (postgres mode)
  version                                   print the version, commit and build date

Configuration: configs/default.yaml, then --config FILE, then QMS_* variables
(QMS_HTTP_ADDR, QMS_STORAGE, QMS_DATABASE_URL, QMS_ADMIN_TOKEN,
QMS_RATELIMIT_PER_MINUTE, QMS_WEBHOOKS_ALLOW_PRIVATE, ...), then --set
key=value flags (--set http.addr=:9000): every key of configs/default.yaml
through each of the three.
`)
}

func loadConfig(fs *flag.FlagSet, args []string) (*config.Config, error) {
	file := fs.String("config", "", "configuration file (YAML)")
	var sets []string
	fs.Func("set", "a setting, key=value (http.addr=:9000), over the file and the environment; repeatable", func(s string) error {
		sets = append(sets, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return config.LoadWith(*file, os.Environ(), sets)
}

func serve(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	noMigrate := fs.Bool("no-migrate", false, "do not apply migrations at start-up")
	cfg, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	if *noMigrate {
		cfg.Database.Migrate = false
	}
	app, _ := bootstrap.New(cfg, bootstrap.Options{Stdout: stdout})
	if err := app.Err(); err != nil {
		return bootstrap.StartupCause(err)
	}
	startPprof(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := app.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	// The whole stop, HTTP connections and jobs included, fits in the
	// shutdown timeout.
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
	defer cancel()
	return app.Stop(stopCtx)
}

func migrate(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "configuration file (YAML)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Only the database settings matter here: no admin token needed.
	cfg, err := config.LoadDatabase(*file, os.Environ())
	if err != nil {
		return err
	}
	if cfg.Storage != config.StoragePostgres {
		return errors.New("migrate needs QMS_STORAGE=postgres: memory mode has nothing to migrate")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, cfg.Database.URL)
	if err != nil {
		return bootstrap.StartupCause(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "qms: migrations applied")
	return nil
}
