package server

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// pair is an accepted connection as the server holds it (counted) and its
// client end.
func pair(t *testing.T) (*counted, net.Conn) {
	t.Helper()
	ln := listen(t)
	g := newGuarded(ln, 10, quiet())
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := g.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*counted), client
}

// readFails reads c, which is sent nothing, and tells how long the read
// took to fail with a deadline's error.
func readFails(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	var b [1]byte
	n, err := c.Read(b[:])
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %d, %v; want the deadline's error", n, err)
	}
	return time.Since(start)
}

// TestLazyDeadlinesFailAtTheLatestDeadline: a later deadline is not armed
// on the socket at once, but a read fails at it, not at the earlier one.
func TestLazyDeadlinesFailAtTheLatestDeadline(t *testing.T) {
	c, _ := pair(t)
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if d := readFails(t, c); d < 290*time.Millisecond || d > 2*time.Second {
		t.Fatalf("the read failed after %v; want 300ms", d)
	}
	// Once failed, it keeps failing (the deadline has passed), as a
	// socket's does.
	if d := readFails(t, c); d > 100*time.Millisecond {
		t.Fatalf("a read past the deadline waited %v", d)
	}
}

// TestLazyDeadlinesArmEarlierOnesAtOnce: an earlier deadline cuts a read
// short, also one in progress (a stream's wake-up moves the deadline to
// the past from another goroutine).
func TestLazyDeadlinesArmEarlierOnesAtOnce(t *testing.T) {
	c, _ := pair(t)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if d := readFails(t, c); d > 2*time.Second {
		t.Fatalf("the read failed after %v; want 50ms", d)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}()
	if d := readFails(t, c); d > 2*time.Second {
		t.Fatalf("the woken read failed after %v; want 50ms", d)
	}
}

// TestLazyDeadlinesCleared: no deadline (the zero time) after one that
// was armed: the read waits for its data past the old deadline.
func TestLazyDeadlinesCleared(t *testing.T) {
	c, client := pair(t)
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_ = c.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = client.Write([]byte("x"))
	}()
	var b [1]byte
	if n, err := c.Read(b[:]); n != 1 || err != nil {
		t.Fatalf("read: %d, %v; want the byte sent after the old deadline", n, err)
	}
}

// TestLazyWriteDeadlines: a write to a client that reads nothing fails at
// the latest write deadline, having written what the socket took.
func TestLazyWriteDeadlines(t *testing.T) {
	c, _ := pair(t)
	_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_ = c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	big := make([]byte, 64<<20)
	n, err := c.Write(big)
	if d := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 || n == len(big) ||
		d < 290*time.Millisecond || d > 3*time.Second {
		t.Fatalf("write: %d bytes, %v after %v; want part of it and the deadline's error at 300ms", n, err, d)
	}
}
