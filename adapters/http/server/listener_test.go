package server

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/http/httpx"
)

// flaky is a listener whose Accept fails with errs, one per call, before
// handing over the real listener's connections.
type flaky struct {
	net.Listener
	errs []error
}

func (f *flaky) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return f.Listener.Accept()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestAcceptRetriesOutOfFiles: "too many open files" (and the other
// errors that pass) never stop the listener; it backs off and accepts the
// next connection.
func TestAcceptRetriesOutOfFiles(t *testing.T) {
	ln := listen(t)
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	errs := []error{emfile, emfile, emfile, &net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}}
	g := newGuarded(&flaky{Listener: ln, errs: errs}, 10, quiet())
	g.giveUp = 0 // a permanent error would end at once: these must not
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := g.Accept()
	if err != nil {
		t.Fatalf("accept after EMFILE: %v", err)
	}
	if g.Open() != 1 {
		t.Fatalf("open %d, want 1", g.Open())
	}
	c.Close()
	c.Close()
	if g.Open() != 0 {
		t.Fatalf("open %d after closing twice, want 0", g.Open())
	}
}

// TestAcceptGivesUpOnAPermanentError: an error not known to pass, for the
// give-up time, ends the listener (and the server ends the process).
func TestAcceptGivesUpOnAPermanentError(t *testing.T) {
	ln := listen(t)
	bad := errors.New("the listening socket is gone")
	errs := make([]error, 1000)
	for i := range errs {
		errs[i] = bad
	}
	g := newGuarded(&flaky{Listener: ln, errs: errs}, 10, quiet())
	g.giveUp = 50 * time.Millisecond
	start := time.Now()
	if _, err := g.Accept(); !errors.Is(err, bad) {
		t.Fatalf("accept: %v, want the permanent error", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v", d)
	}
	// Closed: returns at once.
	ln.Close()
	g = newGuarded(ln, 10, quiet())
	if _, err := g.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept on a closed listener: %v", err)
	}
}

// TestConnectionsPastTheCapGet503: past max open connections, a new one
// is answered 503 with Retry-After in the error envelope and closed; once
// one closes, the next is accepted.
func TestConnectionsPastTheCapGet503(t *testing.T) {
	ln := listen(t)
	g := newGuarded(ln, 2, quiet())
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := g.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	a1, a2 := <-accepted, <-accepted
	defer a2.Close()
	third := dial()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the third connection: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" ||
		resp.ContentLength != int64(len(body)) || !json(body) {
		t.Fatalf("past the cap: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection past the cap was accepted: %v", c.RemoteAddr())
	default:
	}
	a1.Close()
	dial()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
}

func json(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && b[len(b)-1] == '}' && string(b[:10]) == `{"error":{`
}

func TestConnectionCap(t *testing.T) {
	for files, want := range map[int]int{20000: 18000, 1024: 896, 100: 16, 0: 1 << 20} {
		if got := connectionCap(files); got != want {
			t.Errorf("connectionCap(%d) = %d, want %d", files, got, want)
		}
	}
}

// TestAcceptedConnectionsKnowTheirPeer: the address a connection spells
// once is the one httpx worked out from fasthttp's RemoteIP on every
// request (an IPv4 peer as such, not IPv4-mapped).
func TestAcceptedConnectionsKnowTheirPeer(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v (skipped)", addr, err)
			continue
		}
		g := newGuarded(ln, 10, quiet())
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.Accept()
		if err != nil {
			t.Fatal(err)
		}
		pa, ok := c.(httpx.PeerAddresser)
		if !ok {
			t.Fatalf("%s: the accepted connection (%T) does not know its peer", addr, c)
		}
		a, text := pa.PeerAddr()
		want, _ := netip.AddrFromSlice(c.RemoteAddr().(*net.TCPAddr).IP)
		if want = want.Unmap(); a != want || text != want.String() {
			t.Errorf("%s: peer %v %q, want %v", addr, a, text, want)
		}
		client.Close()
		c.Close()
		ln.Close()
	}
}
