package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuTicks is the CPU time (user and system) a process has used, from
// /proc/<pid>/stat, in clock ticks; false where /proc has no such process.
func cpuTicks(pid string) (int64, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is the 3rd field, utime the 14th, stime the 15th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// clockTick is the length of a tick of /proc's CPU times (USER_HZ, 100
// on Linux).
const clockTick = 10 * time.Millisecond

// cpuMeter measures the CPU this test process and PostgreSQL's backends of
// one database use between two readings: on a shared machine the time per
// unit of work is steadier than a rate. Backends are found through
// pg_stat_activity; PostgreSQL must run on this machine (as in make
// load-webhooks), otherwise only the process is measured.
type cpuMeter struct {
	url      string
	self     int64
	backends map[string]int64
}

func startCPU(url string) *cpuMeter {
	m := &cpuMeter{url: url}
	m.self, _ = cpuTicks("self")
	m.backends = m.read()
	return m
}

// read returns the CPU ticks of the database's backends, by pid.
func (m *cpuMeter) read() map[string]int64 {
	out := map[string]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, m.url)
	if err != nil {
		return out
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid::text FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return out
	}
	var pids []string
	for rows.Next() {
		var pid string
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	for _, pid := range pids {
		if t, ok := cpuTicks(pid); ok {
			out[pid] = t
		}
	}
	return out
}

// since returns the CPU time this process and the database's backends
// used since startCPU (a backend that started meanwhile counts whole; one
// that ended meanwhile is missed).
func (m *cpuMeter) since() (self, db time.Duration) {
	now, _ := cpuTicks("self")
	var ticks int64
	for pid, t := range m.read() {
		ticks += t - m.backends[pid]
	}
	return time.Duration(now-m.self) * clockTick, time.Duration(ticks) * clockTick
}
