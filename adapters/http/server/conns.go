package server

import (
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// conns tracks the server's open connections, so that shutdown can close
// those still open when its time is up (fasthttp waits for them forever).
type conns struct {
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// track is a fasthttp ConnState hook. fasthttp calls it twice a request
// (active, idle), which change nothing here: only a connection's opening
// and its end take the lock, shared by every connection's goroutine.
func (cs *conns) track(c net.Conn, state fasthttp.ConnState) {
	switch state {
	case fasthttp.StateNew:
		cs.mu.Lock()
		if cs.open == nil {
			cs.open = map[net.Conn]struct{}{}
		}
		cs.open[c] = struct{}{}
		cs.mu.Unlock()
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		cs.mu.Lock()
		delete(cs.open, c)
		cs.mu.Unlock()
	}
}

// closeAll closes every open connection and tells how many there were.
func (cs *conns) closeAll() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := len(cs.open)
	for c := range cs.open {
		_ = c.Close()
	}
	return n
}
