package bootstrap

import (
	"context"
	"sync"

	"go.uber.org/fx"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/accounts"
)

// listenAuth makes key revocations and plan changes made by any process on
// the database clear this process's authentication cache (issue 14). Its
// hook is appended after the pool's, so it stops before the pool closes.
func listenAuth(lc fx.Lifecycle, l *postgres.AuthListener, svc *accounts.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Add(1)
			go func() { defer wg.Done(); l.Run(ctx, svc) }()
			return nil
		},
		OnStop: func(context.Context) error { cancel(); wg.Wait(); return nil },
	})
}

// notifiedInProcess tells the accounts service that, in memory mode, every
// change to accounts and keys is this process's own and clears its cache
// as it is made.
func notifiedInProcess(svc *accounts.Service) { svc.SetNotified(true) }
