package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// gatedSends is a send for roundTrips[int, string] that records each round
// trip's inputs and holds it until the test releases it.
type gatedSends struct {
	mu      sync.Mutex
	trips   [][]int
	release chan struct{}
	fail    error // every call of a round trip gets it, when set
}

func newGatedSends() *gatedSends { return &gatedSends{release: make(chan struct{})} }

func (g *gatedSends) send(calls []*roundTripCall[int, string]) {
	ins := make([]int, len(calls))
	for i, c := range calls {
		ins[i] = c.in
	}
	g.mu.Lock()
	g.trips = append(g.trips, ins)
	g.mu.Unlock()
	<-g.release
	for _, c := range calls {
		if g.fail != nil {
			c.err = g.fail
			continue
		}
		c.out = fmt.Sprint("answer ", c.in)
	}
}

func (g *gatedSends) sent() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.trips)
}

// waitUntil polls cond for up to five seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (b *roundTrips[Q, R]) waitingForTest() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

func (b *roundTrips[Q, R]) inflightForTest() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inflight
}

type roundTripAnswer struct {
	out string
	err error
}

// startCalls makes the calls ins, one after another, each only once the
// previous one waits (so they queue in that order), and returns where
// their answers arrive, by input.
func startCalls(t *testing.T, b *roundTrips[int, string], ctxs map[int]context.Context, ins ...int) map[int]chan roundTripAnswer {
	t.Helper()
	answers := map[int]chan roundTripAnswer{}
	for _, in := range ins {
		ch := make(chan roundTripAnswer, 1)
		answers[in] = ch
		ctx := ctxs[in]
		if ctx == nil {
			ctx = context.Background()
		}
		before := b.waitingForTest()
		go func() {
			out, err := b.do(ctx, in)
			ch <- roundTripAnswer{out, err}
		}()
		waitUntil(t, fmt.Sprintf("call %d waits", in), func() bool { return b.waitingForTest() == before+1 })
	}
	return answers
}

func answer(t *testing.T, ch chan roundTripAnswer) roundTripAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
		return roundTripAnswer{}
	}
}

// A call on a quiet roundTrips goes out at once, alone, on its caller's
// goroutine, and frees its slot when answered.
func TestRoundTripsQuietCallGoesAlone(t *testing.T) {
	var trips [][]int
	b := newRoundTrips(1, 8, func(calls []*roundTripCall[int, string]) {
		trips = append(trips, []int{calls[0].in, len(calls)}) // no lock: on the caller's goroutine
		calls[0].out = "alone"
	})
	for i := range 3 {
		out, err := b.do(context.Background(), i)
		if out != "alone" || err != nil {
			t.Fatalf("call %d: %q, %v", i, out, err)
		}
	}
	if want := [][]int{{0, 1}, {1, 1}, {2, 1}}; !slices.EqualFunc(trips, want, slices.Equal) {
		t.Errorf("round trips (input, size) %v, want %v", trips, want)
	}
	if n := b.inflightForTest(); n != 0 {
		t.Errorf("%d slots still taken", n)
	}
	if n := b.shared.Load(); n != 0 {
		t.Errorf("%d calls counted as shared", n)
	}
}

// The calls that wait while the slot is out go out together in the order
// they came, at most maxBatch a round trip, and each caller gets its own
// answer.
func TestRoundTripsGatherInOrderEachItsOwn(t *testing.T) {
	g := newGatedSends()
	b := newRoundTrips(1, 3, g.send)
	first := startCallsHolding(t, b, g, 0)
	waiting := startCalls(t, b, nil, 5, 3, 9, 1, 7)
	close(g.release)
	for in, ch := range map[int]chan roundTripAnswer{0: first} {
		if a := answer(t, ch); a.out != fmt.Sprint("answer ", in) || a.err != nil {
			t.Errorf("call %d: %+v", in, a)
		}
	}
	for in, ch := range waiting {
		if a := answer(t, ch); a.out != fmt.Sprint("answer ", in) || a.err != nil {
			t.Errorf("call %d: %+v", in, a)
		}
	}
	if want := [][]int{{0}, {5, 3, 9}, {1, 7}}; !slices.EqualFunc(g.sent(), want, slices.Equal) {
		t.Errorf("round trips %v, want %v", g.sent(), want)
	}
	if n := b.shared.Load(); n != 5 {
		t.Errorf("%d calls counted as shared, want 5", n)
	}
	waitUntil(t, "the slot is free", func() bool { return b.inflightForTest() == 0 })
}

// startCallsHolding makes call in, which finds the slot free, and returns
// once its round trip is being sent (held by g).
func startCallsHolding(t *testing.T, b *roundTrips[int, string], g *gatedSends, in int) chan roundTripAnswer {
	t.Helper()
	ch := make(chan roundTripAnswer, 1)
	go func() {
		out, err := b.do(context.Background(), in)
		ch <- roundTripAnswer{out, err}
	}()
	waitUntil(t, "the first round trip is out", func() bool { return len(g.sent()) == 1 })
	return ch
}

// A round trip that fails hands its error to every call in it, and only
// to them.
func TestRoundTripsFailedRoundTripFailsEveryCaller(t *testing.T) {
	g := newGatedSends()
	b := newRoundTrips(1, 8, g.send)
	first := startCallsHolding(t, b, g, 0)
	waiting := startCalls(t, b, nil, 1, 2, 3)
	boom := errors.New("boom")
	g.fail = boom // read by the sends after the release below
	close(g.release)
	if a := answer(t, first); a.err != boom {
		t.Errorf("the first call: %+v, want its round trip's error", a)
	}
	for in, ch := range waiting {
		if a := answer(t, ch); !errors.Is(a.err, boom) || a.out != "" {
			t.Errorf("call %d: %+v, want its round trip's error", in, a)
		}
	}
	if want := [][]int{{0}, {1, 2, 3}}; !slices.EqualFunc(g.sent(), want, slices.Equal) {
		t.Errorf("round trips %v, want %v", g.sent(), want)
	}
}

// A caller whose context ends while it waits gets its context's error at
// once and is not sent; one whose context ends while its round trip is
// out gets its context's error; the others of the round trip get their
// answers either way.
func TestRoundTripsGoneCallerLeavesOthersAlone(t *testing.T) {
	g := newGatedSends()
	b := newRoundTrips(1, 8, g.send)
	first := startCallsHolding(t, b, g, 0)
	waitingGone, leaveWaiting := context.WithCancel(context.Background())
	sentGone, leaveSent := context.WithCancel(context.Background())
	defer leaveSent()
	waiting := startCalls(t, b, map[int]context.Context{2: waitingGone, 4: sentGone}, 1, 2, 3, 4, 5)
	leaveWaiting()
	if a := answer(t, waiting[2]); !errors.Is(a.err, context.Canceled) {
		t.Errorf("the caller gone while waiting: %+v, want context.Canceled", a)
	}
	// Release the first round trip only; hold the second once it is out.
	g.release <- struct{}{}
	waitUntil(t, "the second round trip is out", func() bool { return len(g.sent()) == 2 })
	leaveSent()
	if a := answer(t, waiting[4]); !errors.Is(a.err, context.Canceled) {
		t.Errorf("the caller gone while sent: %+v, want context.Canceled", a)
	}
	close(g.release)
	if a := answer(t, first); a.err != nil {
		t.Errorf("the first call: %+v", a)
	}
	for _, in := range []int{1, 3, 5} {
		if a := answer(t, waiting[in]); a.out != fmt.Sprint("answer ", in) || a.err != nil {
			t.Errorf("call %d: %+v", in, a)
		}
	}
	if want := [][]int{{0}, {1, 3, 4, 5}}; !slices.EqualFunc(g.sent(), want, slices.Equal) {
		t.Errorf("round trips %v, want %v (the caller gone while waiting not sent)", g.sent(), want)
	}
	waitUntil(t, "the slot is free", func() bool { return b.inflightForTest() == 0 })
}

// Under many callers at once, no more than slots round trips are out at a
// time, none carries more than maxBatch calls, every caller gets its own
// answer, and every slot is free at the end.
func TestRoundTripsInFlightBound(t *testing.T) {
	const slots, maxBatch, callers = 2, 5, 400
	var out, most atomic.Int32
	var sizes sync.Map
	b := newRoundTrips(slots, maxBatch, func(calls []*roundTripCall[int, string]) {
		n := out.Add(1)
		defer out.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		sizes.Store(len(calls), true)
		time.Sleep(200 * time.Microsecond)
		for _, c := range calls {
			c.out = fmt.Sprint("answer ", c.in)
		}
	})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := b.do(context.Background(), i)
			if got != fmt.Sprint("answer ", i) || err != nil {
				t.Errorf("call %d: %q, %v", i, got, err)
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > slots {
		t.Errorf("%d round trips out at once, want at most %d", m, slots)
	}
	gathered := false
	sizes.Range(func(k, _ any) bool {
		if k.(int) > maxBatch {
			t.Errorf("a round trip of %d calls, want at most %d", k, maxBatch)
		}
		gathered = gathered || k.(int) > 1
		return true
	})
	if !gathered {
		t.Error("no round trip gathered calls: the test did not load the slots")
	}
	waitUntil(t, "every slot is free", func() bool { return b.inflightForTest() == 0 })
}

// A send that panics on its caller's goroutine still answers its calls
// and frees its slot: the next call is not left waiting for ever.
func TestRoundTripsPanickingSendFreesItsSlot(t *testing.T) {
	b := newRoundTrips(1, 8, func(calls []*roundTripCall[int, string]) {
		if calls[0].in == 0 {
			panic("send")
		}
		calls[0].out = "after"
	})
	func() {
		defer func() { _ = recover() }()
		_, _ = b.do(context.Background(), 0)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := b.do(ctx, 1); out != "after" || err != nil {
		t.Fatalf("the call after the panic: %q, %v", out, err)
	}
}

// A call that waits is sent with its own copy of what it asked for (keep):
// its caller may give up while the round trip leaves, and return, and the
// memory its in pointed to be reused (a turn id is fiber's path buffer,
// with Immutable off) before the round trip reads it. Without keep, the
// round trip reads the next request's bytes.
func TestRoundTripsWaitingCallKeepsItsOwnCopy(t *testing.T) {
	first, second := make(chan struct{}), make(chan struct{})
	inSecond := make(chan struct{})
	seen := make(chan string, 1)
	trips := 0
	b := newRoundTrips(1, 64, func(calls []*roundTripCall[string, int]) {
		trips++ // sends run one at a time here: one slot
		if trips == 1 {
			<-first
			return
		}
		close(inSecond)
		<-second
		seen <- calls[0].in
	})
	b.keep = strings.Clone
	go func() { _, _ = b.do(context.Background(), "turn_first") }()
	waitUntil(t, "the first call holds the slot", func() bool { return b.inflightForTest() == 1 })
	buf := []byte("turn_AAAA") // the request's path buffer
	id := unsafe.String(&buf[0], len(buf))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.do(ctx, id); done <- err }()
	waitUntil(t, "the second call waits", func() bool { return b.waitingForTest() == 1 })
	close(first) // the first round trip returns; the waiting call goes out
	<-inSecond
	cancel() // its request's deadline: the handler answers and returns
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v, want its context's error", err)
	}
	copy(buf, "turn_BBBB") // the next request on the connection reuses the buffer
	close(second)
	if got := <-seen; got != "turn_AAAA" {
		t.Errorf("the round trip read the abandoned call's id as %q after its caller returned", got)
	}
}
