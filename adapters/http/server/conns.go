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

// track is a fasthttp ConnState hook.
func (cs *conns) track(c net.Conn, state fasthttp.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch state {
	case fasthttp.StateNew:
		if cs.open == nil {
			cs.open = map[net.Conn]struct{}{}
		}
		cs.open[c] = struct{}{}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(cs.open, c)
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
