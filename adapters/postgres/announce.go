package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnnouncerApplication is the application_name of the announcer's
// connection. Its NOTIFY transactions take transaction ids but write no
// event, so the stream's horizon passes over them (horizonCTE).
const AnnouncerApplication = "qms_announcer"

// announceTimeout bounds one NOTIFY of the announcer; a failed one is
// dropped (listeners fall back on their safety poll).
const announceTimeout = 5 * time.Second

// maxAnnounce bounds the accounts named by one NOTIFY statement.
const maxAnnounce = 500

// announcer tells every process listening on StreamChannel which accounts
// have new events, after the transactions that wrote them commit.
//
// The events table used to announce each event from a trigger, inside the
// writing transaction. PostgreSQL serialises the commits of transactions
// that NOTIFY (a database-wide lock from pre-commit until after the commit
// record is flushed), so every intake waited for the WAL flush of the one
// before it, and the commits of concurrent intakes could not share a flush.
// Now the unit of work hands the account to the announcer once it has
// committed, and one goroutine per process sends a NOTIFY, in its own
// short transaction, for all the accounts gathered meanwhile: the writes
// share flushes again, and under load one NOTIFY carries many accounts.
//
// What it costs: an event committed by a process that dies before its
// NOTIFY is sent wakes no feed; feeds find it at their next read (another
// event of the account, or the hub's safety poll, 5 s). The stream's order
// and completeness never depended on notifications, only its latency.
type announcer struct {
	db *DB
	// conn is the announcer's own connection (run's goroutine only),
	// opened when first needed and again after a failure.
	conn *pgx.Conn

	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newAnnouncer(db *DB) *announcer {
	a := &announcer{db: db, pending: map[string]struct{}{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// announce queues an account with new committed events; it never blocks.
func (a *announcer) announce(accountID string) {
	if accountID == "" {
		return
	}
	a.mu.Lock()
	a.pending[accountID] = struct{}{}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default: // a wake is already queued
	}
}

// announcePace is the least time between two NOTIFYs of a process: the
// accounts whose events commit meanwhile wait for the next and share it.
// A commit after a quiet moment is announced at once. Under P3 (issue 30,
// about 2,500 intakes a second of one account) the announcer sent a NOTIFY
// for every four or five intakes, each a transaction of its own, a wake-up
// of every listening process and of their feeds; paced, one per
// announcePace at most.
const announcePace = 10 * time.Millisecond

func (a *announcer) run() {
	defer close(a.done)
	pace := time.NewTimer(announcePace)
	pace.Stop()
	for {
		select {
		case <-a.stop:
			a.flush() // what committed before Close is still announced
			return
		case <-a.wake:
		}
		a.flush()
		pace.Reset(announcePace)
		select {
		case <-a.stop:
			a.flush()
			return
		case <-pace.C:
		}
	}
}

// flush sends what is pending, maxAnnounce accounts per statement.
func (a *announcer) flush() {
	for {
		a.mu.Lock()
		if len(a.pending) == 0 {
			a.mu.Unlock()
			return
		}
		accounts := make([]string, 0, min(len(a.pending), maxAnnounce))
		for id := range a.pending {
			accounts = append(accounts, id)
			delete(a.pending, id)
			if len(accounts) == maxAnnounce {
				break
			}
		}
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
		err := a.notify(ctx, accounts)
		cancel()
		if err != nil && a.db.Logger != nil {
			a.db.Logger.Warn("stream: announce new events", "accounts", len(accounts), "error", err)
		}
	}
}

// notify sends one NOTIFY per account, in one statement, on the
// announcer's connection.
func (a *announcer) notify(ctx context.Context, accounts []string) error {
	if a.conn == nil {
		cfg := a.db.Pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = AnnouncerApplication
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return wrap(err, "announcer: connect")
		}
		a.conn = conn
	}
	_, err := a.conn.Exec(ctx, `SELECT pg_notify('`+StreamChannel+`', a) FROM unnest($1::text[]) AS a`, accounts)
	if err != nil {
		_ = a.conn.Close(context.WithoutCancel(ctx))
		a.conn = nil
		return wrap(err, "announcer: notify")
	}
	return nil
}

// close announces what is pending and stops the goroutine.
func (a *announcer) close() {
	close(a.stop)
	<-a.done
	if a.conn != nil {
		_ = a.conn.Close(context.Background())
	}
}
