package pgcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Formation is a pg_auto_failover formation of the test's own: a monitor
// and two PostgreSQL nodes on loopback ports, each run by `pg_autoctl run`
// (Debian's pg-auto-failover-cli and postgresql-NN-auto-failover), as the
// postgres user when the test runs as root. Its configuration and state
// live in the test's directory (XDG_CONFIG_HOME, XDG_DATA_HOME), never in
// the user's. Without pg_autoctl the test is skipped, or fails under
// CI=true.
type Formation struct {
	t       testing.TB
	bin     string // PostgreSQL's server binaries
	dir     string
	user    string
	monitor string // the monitor's PGDATA
	// Nodes are the data nodes, node1 first (the first primary).
	Nodes []*Node
	procs []*exec.Cmd
}

// Node is one data node of a Formation.
type Node struct {
	Name   string
	Port   int
	PGDATA string
}

// URL is the node's database alone, as a process configured with one host
// sees it.
func (n *Node) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.Port, FormationDB)
}

// FormationDB is the database the formation's nodes serve.
const FormationDB = "qms"

// StartFormation creates and runs a monitor and two nodes, and waits until
// node1 is primary and node2 its secondary. Everything is stopped and
// removed when the test ends.
func StartFormation(t testing.TB) *Formation {
	t.Helper()
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		unavailable(t, "no pg_autoctl (apt-get install pg-auto-failover-cli postgresql-15-auto-failover)")
	}
	bin := binDir()
	if bin == "" {
		unavailable(t, "no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin; set QMS_TEST_PG_BIN")
	}
	f := &Formation{t: t, bin: bin}
	dir, err := os.MkdirTemp("", "qms-autofailover-")
	if err != nil {
		t.Fatal(err)
	}
	f.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "running as root, and there is no postgres user to run pg_autoctl as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "run")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		f.user = "postgres"
	}
	t.Cleanup(f.stop)

	f.monitor = filepath.Join(dir, "monitor")
	monitorPort := serverPort(t)
	f.autoctl("create", "monitor", "--pgdata", f.monitor, "--pgport", strconv.Itoa(monitorPort),
		"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl")
	f.run("monitor", f.monitor)
	monitorURI := f.waitMonitor(fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", monitorPort))

	for i := 1; i <= 2; i++ {
		n := &Node{Name: fmt.Sprintf("node%d", i), Port: serverPort(t), PGDATA: filepath.Join(dir, fmt.Sprintf("node%d", i))}
		f.autoctl("create", "postgres", "--pgdata", n.PGDATA, "--pgport", strconv.Itoa(n.Port),
			"--hostname", "127.0.0.1", "--name", n.Name, "--auth", "trust", "--no-ssl",
			"--dbname", FormationDB, "--monitor", monitorURI)
		// The test's own servers need no durability: a node restarted
		// after kill -9 skips syncing its whole data directory (which takes
		// seconds on a loaded machine) and recovers from its WAL at once.
		//
		// pg_auto_failover replicates synchronously (synchronous_standby_names
		// 'ANY 1 (...)'): a primary restarted after a crash commits nothing
		// until its standby is streaming again, and a standby whose
		// walreceiver lost the primary starts a new one only after
		// wal_retrieve_retry_interval, 5 s by default. That wait, not the
		// restart (0.2 to 3 s) nor crash recovery (milliseconds), was the
		// 5 s of every kill -9 in the failover test; docs/operations.md
		// tells operators the same. The replication commands are logged
		// for the timings of a failed run.
		conf, err := os.OpenFile(filepath.Join(n.PGDATA, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conf.WriteString("\n# qms test: see StartFormation\nfsync = off\nwal_retrieve_retry_interval = 200ms\nlog_replication_commands = on\n")
		conf.Close()
		if err != nil {
			t.Fatal(err)
		}
		f.run(n.Name, n.PGDATA)
		f.Nodes = append(f.Nodes, n)
		if i == 1 {
			f.WaitState(90*time.Second, map[string]string{"node1": "single"})
		}
	}
	f.WaitState(120*time.Second, map[string]string{"node1": "primary", "node2": "secondary"})
	return f
}

// URL is the formation's multi-host URL, as `pg_autoctl show uri` prints
// it (with the postgres user, and without TLS).
func (f *Formation) URL() string {
	out := f.autoctl("show", "uri", "--pgdata", f.monitor, "--formation", "default")
	uri := strings.TrimSpace(out)
	uri = strings.Replace(uri, "postgres://", "postgres://postgres@", 1)
	return strings.Replace(uri, "sslmode=prefer", "sslmode=disable", 1)
}

// State is each node's reported and assigned states, by name.
func (f *Formation) State() map[string][2]string {
	f.t.Helper()
	out := f.autoctl("show", "state", "--pgdata", f.monitor, "--json")
	var nodes []struct {
		Name     string `json:"nodename"`
		Reported string `json:"current_group_state"`
		Assigned string `json:"assigned_group_state"`
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		f.t.Fatalf("pgcluster: pg_autoctl show state: %v\n%s", err, out)
	}
	m := map[string][2]string{}
	for _, n := range nodes {
		m[n.Name] = [2]string{n.Reported, n.Assigned}
	}
	return m
}

// WaitState waits until every named node has reported and been assigned
// the state given.
func (f *Formation) WaitState(within time.Duration, want map[string]string) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := f.State()
		ok := true
		for name, s := range want {
			if st[name] != [2]string{s, s} {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("pgcluster: formation not in %v after %v: %v\n%s", want, within, st, f.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WaitSettled waits until one node is primary and every other one its
// secondary (after a crash the keeper may restart the primary, or the
// monitor may fail over; either way), and returns the primary.
func (f *Formation) WaitSettled(within time.Duration) *Node {
	f.t.Helper()
	deadline := time.Now().Add(within)
	demoting := map[string]time.Time{} // since when each node is told to demote and has not
	for {
		st := f.State()
		f.unstick(st, demoting)
		var primary *Node
		secondaries := 0
		for _, n := range f.Nodes {
			switch st[n.Name] {
			case [2]string{"primary", "primary"}:
				primary = n
			case [2]string{"secondary", "secondary"}:
				secondaries++
			}
		}
		if primary != nil && secondaries == len(f.Nodes)-1 {
			return primary
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("pgcluster: formation not settled after %v: %v\n%s", within, st, f.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stuckShutdown is how long a node may stay assigned a demotion it has
// not reported before unstick stops its postmaster.
const stuckShutdown = 20 * time.Second

// unstick stops, as an operator would (an immediate shutdown, SIGQUIT to
// the postmaster), the PostgreSQL of a node the monitor has told to demote
// for stuckShutdown while it still reports primary: its fast shutdown
// hangs, and the formation would never settle. It did so when a backend
// exited while its standby was being promoted with work to commit at exit
// (the failover test's probe made a temporary table, whose drop at exit
// waited for synchronous replication for good); the probe no longer does,
// and this stays a net. The database's outage until then is the
// database's own; the failover test measures it either way.
func (f *Formation) unstick(st map[string][2]string, demoting map[string]time.Time) {
	f.t.Helper()
	for _, n := range f.Nodes {
		s := st[n.Name]
		if s[0] != "primary" || (s[1] != "demoted" && s[1] != "demote_timeout" && s[1] != "draining") {
			delete(demoting, n.Name)
			continue
		}
		since, ok := demoting[n.Name]
		if !ok {
			demoting[n.Name] = time.Now()
			continue
		}
		if time.Since(since) < stuckShutdown {
			continue
		}
		b, err := os.ReadFile(filepath.Join(n.PGDATA, "postmaster.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil {
			continue
		}
		f.t.Logf("pgcluster: %s told to demote %v ago and still primary (its fast shutdown hangs); immediate shutdown of postmaster %d",
			n.Name, time.Since(since).Round(time.Second), pid)
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		demoting[n.Name] = time.Now()
	}
}

// PerformFailover asks the monitor for a failover and waits for it
// (`pg_autoctl perform failover`): the primary is demoted, the secondary
// promoted.
//
// It first waits for the formation to settle: after a crash the monitor
// may still be failing over by itself, and then it answers "couldn't find
// the primary node". If the request fails because the monitor moved the
// primary meanwhile (a loaded machine misses a health check), that
// failover is the one asked for; otherwise it asks again, up to three
// times.
func (f *Formation) PerformFailover() {
	f.t.Helper()
	before := f.WaitSettled(2 * time.Minute)
	for attempt := 1; ; attempt++ {
		out, err := f.tryAutoctl("perform", "failover", "--pgdata", f.monitor, "--wait", "90")
		if err == nil {
			return
		}
		after := f.WaitSettled(2 * time.Minute)
		if after != before {
			f.t.Logf("pgcluster: perform failover: %v; the monitor failed over by itself meanwhile (%s is primary)", err, after.Name)
			return
		}
		if attempt == 3 {
			f.t.Fatalf("pgcluster: pg_autoctl perform failover, 3 attempts: %v\n%s\n%s", err, out, f.logs())
		}
		f.t.Logf("pgcluster: perform failover, attempt %d: %v; asking again", attempt, err)
	}
}

// Primary is the node the monitor has as primary now.
func (f *Formation) Primary() *Node {
	f.t.Helper()
	st := f.State()
	for _, n := range f.Nodes {
		if st[n.Name][0] == "primary" {
			return n
		}
	}
	f.t.Fatalf("pgcluster: no primary: %v", st)
	return nil
}

// KillPostmaster kills the node's postmaster with SIGKILL, as a crash would.
func (f *Formation) KillPostmaster(n *Node) {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.PGDATA, "postmaster.pid"))
	if err != nil {
		f.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		f.t.Fatalf("pgcluster: postmaster.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		f.t.Fatalf("pgcluster: kill -9 %d: %v", pid, err)
	}
}

// waitMonitor waits for the monitor to answer at uri.
func (f *Formation) waitMonitor(uri string) string {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, uri)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return uri
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("pgcluster: the monitor did not answer: %v\n%s", err, f.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// autoctl runs a pg_autoctl command to its end and returns its output.
func (f *Formation) autoctl(args ...string) string {
	f.t.Helper()
	out, err := f.tryAutoctl(args...)
	if err != nil {
		f.t.Fatalf("pgcluster: pg_autoctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, f.logs())
	}
	return out
}

func (f *Formation) tryAutoctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := f.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// run starts `pg_autoctl run` for a node in the background; its output
// goes to <name>.log in the formation's directory.
func (f *Formation) run(name, pgdata string) {
	f.t.Helper()
	log, err := os.Create(filepath.Join(f.dir, name+".log"))
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := f.command(context.Background(), "run", "--pgdata", pgdata)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("pgcluster: pg_autoctl run %s: %v", name, err)
	}
	f.procs = append(f.procs, cmd)
	go func() { _ = cmd.Wait(); log.Close() }()
}

// command is pg_autoctl with args, as the server's user, with the
// formation's own XDG directories and PostgreSQL's binaries on PATH.
func (f *Formation) command(ctx context.Context, args ...string) *exec.Cmd {
	env := []string{
		"XDG_CONFIG_HOME=" + filepath.Join(f.dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(f.dir, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(f.dir, "run"),
		"PATH=" + f.bin + ":/usr/bin:/bin",
		"PG_CONFIG=" + filepath.Join(f.bin, "pg_config"),
		"PGUSER=postgres",
		"HOME=" + f.dir,
	}
	argv := append([]string{"pg_autoctl"}, args...)
	if f.user != "" {
		cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", f.user, "--", "env"}, append(env, argv...)...)...)
		cmd.Dir = f.dir
		return cmd
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = f.dir
	return cmd
}

// stop stops every node and the monitor, immediately, and makes sure no
// process of theirs is left.
func (f *Formation) stop() {
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		_, _ = f.tryAutoctl("stop", "--pgdata", f.Nodes[i].PGDATA, "--immediate")
	}
	if f.monitor != "" {
		_, _ = f.tryAutoctl("stop", "--pgdata", f.monitor, "--immediate")
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range f.procs {
		for p.ProcessState == nil && time.Now().Before(deadline) {
			if syscall.Kill(p.Process.Pid, 0) != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The process group of that `pg_autoctl run`, should it linger.
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
	}
	// A postmaster that outlived its keeper.
	for _, pgdata := range append([]string{f.monitor}, f.nodeDirs()...) {
		if b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func (f *Formation) nodeDirs() []string {
	var out []string
	for _, n := range f.Nodes {
		out = append(out, n.PGDATA)
	}
	return out
}

// logs is the tail of each pg_autoctl's output, for failure messages.
func (f *Formation) Logs() string { return f.logs() }

func (f *Formation) logs() string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(f.dir, "*.log"))
	for _, n := range f.Nodes {
		// Each node's server log, the newest file.
		if logs, _ := filepath.Glob(filepath.Join(n.PGDATA, "log", "*.log")); len(logs) > 0 {
			paths = append(paths, logs[len(logs)-1])
		}
	}
	if out, err := exec.Command("ps", "-eo", "pid,pgid,user,etime,args").Output(); err == nil {
		var mine []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, f.dir) {
				mine = append(mine, l)
			}
		}
		fmt.Fprintf(&b, "--- processes\n%s\n", strings.Join(mine, "\n"))
	}
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", strings.TrimPrefix(p, f.dir+"/"), strings.Join(lines, "\n"))
	}
	return b.String()
}

// serverPort picks a free loopback port below the kernel's ephemeral
// range: pg_autoctl's servers listen on every address (-h *), and a port
// from the ephemeral range may be taken, between the pick and the
// server's bind, by one of the many outgoing connections of a busy test
// machine, leaving the server listening on IPv6 only.
func serverPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		return p
	}
	t.Fatal("pgcluster: no free port in 20000-31999")
	return 0
}
