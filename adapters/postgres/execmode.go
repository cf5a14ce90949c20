package postgres

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// bun formats every value into the SQL text, so no two statements about
// different rows share a text. Under pgx's default mode (cache statement)
// each new text costs a prepare — a round trip of its own before the
// execution — and fills the per-connection statement cache with texts
// never seen again, whose evictions cost more round trips. execConnector
// makes the argument-less statements bun sends run as one unnamed
// extended-protocol exchange (pgx.QueryExecModeExec): one round trip each.
// Statements with arguments (River's, through the bridge, use the pgx
// connection directly) keep the pool's default mode.
type execConnector struct{ driver.Connector }

func (c execConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("postgres: driver connection is %T, want *stdlib.Conn", conn)
	}
	return execConn{sc}, nil
}

// execConn is a stdlib connection that runs argument-less queries in
// pgx.QueryExecModeExec.
type execConn struct{ *stdlib.Conn }

// execMode is the argument pgx reads as the query's execution mode.
var execMode = []driver.NamedValue{{Ordinal: 1, Value: pgx.QueryExecModeExec}}

func (c execConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		args = execMode
	}
	return c.Conn.QueryContext(ctx, query, args)
}

// pgxConn is the pgx connection under a database/sql driver connection.
func pgxConn(driverConn any) (*pgx.Conn, error) {
	switch c := driverConn.(type) {
	case execConn:
		return c.Conn.Conn(), nil
	case *stdlib.Conn:
		return c.Conn(), nil
	}
	return nil, fmt.Errorf("postgres: pgx bridge: driver connection is %T, want *stdlib.Conn", driverConn)
}
