// Package pgcluster runs a PostgreSQL cluster of a test's own (initdb and
// pg_ctl from the local PostgreSQL installation), so a test can stop and
// start the database under a running qms without touching the shared
// server every other test uses.
//
// initdb and postgres refuse to run as root: as root, the cluster runs as
// the postgres user (which Debian's postgresql package creates) through
// runuser. Without the binaries, or as root without that user, the test is
// skipped, or fails under CI=true, as test/pgtest does.
package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Cluster is a running (or stopped) PostgreSQL cluster on a loopback port.
type Cluster struct {
	t    testing.TB
	bin  string
	dir  string // data directory (also the socket directory)
	port int
	user string // the user the server runs as; "" is the test's own
}

// unavailable skips the test, or fails it under CI=true.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "pgcluster: " + fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a test that cannot run fails)")
	}
	t.Skip(msg)
}

// binDir finds PostgreSQL's server binaries: QMS_TEST_PG_BIN, else the
// newest /usr/lib/postgresql/*/bin with initdb.
func binDir() string {
	if d := os.Getenv("QMS_TEST_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// Start creates a cluster in a fresh directory, starts it, and stops and
// removes it when the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := binDir()
	if bin == "" {
		unavailable(t, "no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin; set QMS_TEST_PG_BIN")
	}
	c := &Cluster{t: t, bin: bin, port: freePort(t)}
	parent, err := os.MkdirTemp("", "qms-pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	c.dir = filepath.Join(parent, "data")
	if err := os.Mkdir(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "running as root, and there is no postgres user to run the cluster as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The server's user must reach its directory.
		if err := os.Chmod(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(c.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.user = "postgres"
	}
	c.run("initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	c.Start()
	t.Cleanup(func() {
		if c.running() {
			c.ctl("stop", "-m", "immediate")
		}
	})
	return c
}

// URL is the cluster's postgres database over TCP.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", c.port, c.dir)
	c.ctl("start", "-w", "-t", "60", "-l", filepath.Join(c.dir, "server.log"), "-o", opts)
}

// Stop stops the server: "fast" ends every session (clients see their
// connections closed), "immediate" kills the server as a crash would.
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	c.ctl("stop", "-w", "-t", "60", "-m", mode)
}

func (c *Cluster) running() bool {
	cmd := c.command(filepath.Join(c.bin, "pg_ctl"), "status", "-D", c.dir)
	return cmd.Run() == nil
}

func (c *Cluster) ctl(args ...string) {
	c.t.Helper()
	c.run("pg_ctl", append([]string{"-D", c.dir}, args...)...)
}

// run runs one of the cluster's binaries as the server's user.
func (c *Cluster) run(name string, args ...string) {
	c.t.Helper()
	cmd := c.command(filepath.Join(c.bin, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		c.t.Fatalf("pgcluster: %s %v: %v\n%s\n%s", name, args, err, out.String(), log)
	}
}

func (c *Cluster) command(path string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c.t.Cleanup(cancel)
	if c.user != "" {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", c.user, "--", path}, args...)...)
	}
	return exec.CommandContext(ctx, path, args...)
}

// freePort asks the kernel for a loopback port nobody uses now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
