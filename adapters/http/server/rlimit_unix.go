//go:build unix

package server

import "syscall"

// raiseFileLimit raises the process's soft limit of open files to its
// hard limit (Go does this at start on most systems; done here too so the
// cap below is computed from what holds) and returns the soft limit, 0
// when unknown.
func raiseFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	if r.Cur < r.Max {
		want := r
		want.Cur = r.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			r = want
		}
	}
	if r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}
