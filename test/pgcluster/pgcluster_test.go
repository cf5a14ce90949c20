package pgcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/qms-dev/qms/test/pgcluster"
)

func TestStopAndStart(t *testing.T) {
	c := pgcluster.Start(t)
	ctx := context.Background()
	query := func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var n int
		return conn.QueryRow(ctx, "SELECT 1").Scan(&n)
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
	c.Stop("fast")
	if err := query(); err == nil {
		t.Fatal("a stopped cluster answered")
	}
	c.Start()
	if err := query(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
