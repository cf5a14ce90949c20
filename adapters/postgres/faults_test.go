package postgres_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/test/pgtest"
)

func TestUnavailableRecognisesAnUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = postgres.Open(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	if err == nil || !postgres.Unavailable(err) {
		t.Fatalf("Open on a closed port: %v, Unavailable %v", err, postgres.Unavailable(err))
	}
	if postgres.Unavailable(errors.New("syntax error at or near")) {
		t.Fatal("a plain error counted as unavailable")
	}
}

// TestFullPoolAnswersWithinTheAcquireTimeout holds the only connection of
// a one-connection pool: a second unit of work gives up after the acquire
// timeout with an error Unavailable recognises, instead of waiting for
// its whole context.
func TestFullPoolAnswersWithinTheAcquireTimeout(t *testing.T) {
	url := pgtest.URL(t)
	db, err := postgres.OpenWith(context.Background(), url+"&pool_max_conns=1", postgres.Options{AcquireTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = db.Do(context.Background(), func(context.Context) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err = db.Do(ctx, func(context.Context) error { return nil })
	waited := time.Since(start)
	if err == nil || !postgres.Unavailable(err) {
		t.Fatalf("second unit of work: %v (Unavailable %v)", err, postgres.Unavailable(err))
	}
	if waited < 150*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("waited %v, want about the 200ms acquire timeout", waited)
	}
}
