package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/memory"
	"github.com/qms-dev/qms/core/events"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/core/webhooks"
	"github.com/qms-dev/qms/test/testkit"
)

const account = "acc_1"

// sender answers from a script and records the requests.
type sender struct {
	mu      sync.Mutex
	answers []webhooks.Result
	got     []webhooks.Request
	block   chan struct{} // when set, Send waits on it or ctx
}

func (s *sender) Send(ctx context.Context, r webhooks.Request) webhooks.Result {
	s.mu.Lock()
	s.got = append(s.got, r)
	block := s.block
	var res webhooks.Result
	if len(s.answers) > 0 {
		res, s.answers = s.answers[0], s.answers[1:]
	} else {
		res = webhooks.Result{Status: 200}
	}
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return webhooks.Result{Err: ctx.Err()}
		}
	}
	return res
}

func (s *sender) requests() []webhooks.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]webhooks.Request(nil), s.got...)
}

// resolver answers lookups from a table; an unknown host does not exist.
type resolver map[string][]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

var publicDNS = resolver{
	"hooks.example.com":    {"93.184.216.34"},
	"dual.example.com":     {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
	"internal.example.com": {"93.184.216.34", "10.1.2.3"},
	"rebind.example.com":   {"::ffff:127.0.0.1"},
	"meta.example.com":     {"169.254.169.254"},
}

type fixture struct {
	store  *memory.Store
	repo   *memory.Webhooks
	jobs   *testkit.Jobs
	sender *sender
	clock  *platformtest.Clock
	svc    *webhooks.Service
	bus    *events.Bus
}

func newFixture(t *testing.T, opts webhooks.Options) *fixture {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	set, store := testkit.MemorySet(t, clock)
	f := &fixture{store: store, repo: set.Webhooks.(*memory.Webhooks), jobs: testkit.NewJobs(store),
		sender: &sender{}, clock: clock}
	if opts.URLs.Resolver == nil {
		opts.URLs.Resolver = publicDNS
	}
	f.svc = webhooks.NewService(f.repo, store, f.jobs, f.sender, f.clock, opts)
	f.bus = events.NewBus(set.Events)
	f.bus.Subscribe(f.svc)
	return f
}

func (f *fixture) create(t *testing.T, url string, events ...string) webhooks.CreatedEndpoint {
	t.Helper()
	ep, err := f.svc.Create(context.Background(), account, webhooks.CreateInput{URL: &url, Events: &events})
	if err != nil {
		t.Fatalf("create %s: %v", url, err)
	}
	return ep
}

// emit raises an event in a unit of work that fails when fail is set.
func (f *fixture) emit(t *testing.T, name string, fail bool) error {
	t.Helper()
	return f.store.Do(context.Background(), func(ctx context.Context) error {
		err := f.bus.Emit(ctx, platform.Event{AccountID: account, Name: name, QueueID: "que_1", RunID: "run_1",
			OccurredAt: f.clock.Now(), Data: json.RawMessage(`{"queueId":"que_1","queueRunId":"run_1"}`)})
		if err != nil {
			return err
		}
		if fail {
			return errors.New("the change failed")
		}
		return nil
	})
}

// run runs one job's attempt.
func (f *fixture) run(t *testing.T, j platform.Job) error {
	t.Helper()
	if j.Kind != webhooks.JobDeliver {
		t.Fatalf("job kind %q", j.Kind)
	}
	return f.svc.Attempt(context.Background(), j.Args.(webhooks.AttemptArgs))
}

func (f *fixture) delivery(t *testing.T, id string) webhooks.Delivery {
	t.Helper()
	d, err := f.svc.GetDelivery(context.Background(), account, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func one[T any](t *testing.T, xs []T) T {
	t.Helper()
	if len(xs) != 1 {
		t.Fatalf("want exactly one, got %d: %+v", len(xs), xs)
	}
	return xs[0]
}

func TestCreateValidation(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	long := "https://hooks.example.com/" + strings.Repeat("a", 500)
	cases := []struct {
		name   string
		url    *string
		events *[]string
		want   map[string]string
	}{
		{"nothing", nil, nil, map[string]string{"url": "required", "events": "required"}},
		{"no events", platform.Ptr("https://hooks.example.com/x"), &[]string{}, map[string]string{"events": "min_items"}},
		{"unknown event", platform.Ptr("https://hooks.example.com/x"), &[]string{"queue.opened", "turn.exploded"}, map[string]string{"events[1]": "oneof"}},
		{"repeated event", platform.Ptr("https://hooks.example.com/x"), &[]string{"queue.opened", "queue.opened"}, map[string]string{"events[1]": "unique"}},
		{"empty url", platform.Ptr(""), &[]string{"queue.opened"}, map[string]string{"url": "min_length"}},
		{"too long", &long, &[]string{"queue.opened"}, map[string]string{"url": "max_length"}},
		{"relative", platform.Ptr("/hooks"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"ftp", platform.Ptr("ftp://hooks.example.com/x"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"no host", platform.Ptr("https:///x"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"opaque", platform.Ptr("mailto:a@b.c"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"bad port", platform.Ptr("https://hooks.example.com:99999/x"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"inet_aton spelling", platform.Ptr("http://127.1/x"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
		{"decimal spelling", platform.Ptr("http://2130706433/x"), &[]string{"queue.opened"}, map[string]string{"url": "uri"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.svc.Create(context.Background(), account, webhooks.CreateInput{URL: c.url, Events: c.events})
			if !platform.IsCode(err, platform.CodeValidation) {
				t.Fatalf("want VALIDATION_ERROR, got %v", err)
			}
			got := platform.FieldRules(err)
			for path, rule := range c.want {
				if got[path] != rule {
					t.Errorf("%s: want rule %q, got %q (all: %v)", path, rule, got[path], got)
				}
			}
		})
	}
}

func TestCreateRefusesPrivateTargets(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	for _, u := range []string{
		"http://127.0.0.1/x", "http://127.9.9.9:8080/x", "http://[::1]/x", "http://[::ffff:127.0.0.1]/x",
		"http://[::ffff:7f00:1]/x", "http://10.0.0.8/x", "http://172.16.4.4/x", "http://192.168.1.1/x",
		"http://169.254.169.254/latest/meta-data", "http://100.64.0.1/x", "http://0.0.0.0/x", "http://[::]/x",
		"http://[fe80::1]/x", "http://[fd00::1]/x", "http://[ff02::1]/x", "http://224.0.0.1/x",
		"http://[64:ff9b::a00:1]/x", "http://[2002:a00:1::]/x", "http://localhost:8080/x", "http://api.localhost/x",
		"https://internal.example.com/x", "https://rebind.example.com/x", "https://meta.example.com/x",
		"https://nowhere.example.com/x", "http://LOCALHOST./x",
	} {
		_, err := f.svc.Create(context.Background(), account, webhooks.CreateInput{URL: &u, Events: &[]string{"queue.opened"}})
		if got := platform.FieldRules(err)["url"]; got != "public_host" {
			t.Errorf("%s: want url refused with public_host, got %v", u, err)
		}
	}
	for _, u := range []string{"https://hooks.example.com/x", "https://dual.example.com:8443/x?k=v", "http://93.184.216.34/x", "https://[2606:4700::1111]/x"} {
		if _, err := f.svc.Create(context.Background(), account, webhooks.CreateInput{URL: &u, Events: &[]string{"queue.opened"}}); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestAllowPrivateLiftsTheAddressChecks(t *testing.T) {
	f := newFixture(t, webhooks.Options{URLs: webhooks.URLPolicy{AllowPrivate: true}})
	f.create(t, "http://127.0.0.1:9999/hook", "queue.opened")
	f.create(t, "http://localhost:9999/hook", "queue.opened")
}

func TestAddressAllowed(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "93.184.216.34": true, "2606:4700::1111": true, "2a00:1450:4001::1": true,
		"127.0.0.1": false, "10.255.255.255": false, "172.31.0.1": false, "172.32.0.1": true,
		"192.168.0.1": false, "169.254.1.1": false, "100.64.0.1": false, "100.127.255.255": false,
		"100.128.0.1": true, "0.0.0.0": false, "0.1.2.3": false, "255.255.255.255": false,
		"224.0.0.251": false, "239.1.1.1": false, "192.0.2.1": false, "198.18.0.1": false,
		"::": false, "::1": false, "::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true,
		"::127.0.0.1": false, "fe80::1": false, "fe80::1%eth0": false, "fc00::1": false,
		"fd12:3456::1": false, "ff02::1": false, "ff0e::1": false, "64:ff9b::7f00:1": false,
		"2002:7f00:1::": false, "2001:0:4136:e378::1": false, "2001:db8::1": false, "fec0::1": false,
		"100::1": false,
	} {
		if got := webhooks.AddressAllowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("AddressAllowed(%s) = %v, want %v", addr, got, want)
		}
	}
	if webhooks.AddressAllowed(netip.Addr{}) {
		t.Error("the zero address is allowed")
	}
}

func TestCreateShowsTheSecretOnce(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	ep := f.create(t, "https://hooks.example.com/x", "queue.opened", "queue.closed")
	if !strings.HasPrefix(ep.SigningSecret, "whsec_") || len(ep.SigningSecret) < 40 {
		t.Fatalf("secret %q", ep.SigningSecret)
	}
	created, _ := json.Marshal(ep)
	if !bytes.Contains(created, []byte(ep.SigningSecret)) {
		t.Fatalf("the creation answer lacks the secret: %s", created)
	}
	page, err := f.svc.List(context.Background(), account, platform.PageRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	listed := one(t, page.Items)
	for _, form := range []string{
		string(must(json.Marshal(listed))), fmt.Sprintf("%v", listed), fmt.Sprintf("%+v", listed),
		fmt.Sprintf("%#v", listed), fmt.Sprint(listed.Secret), logLine(listed),
	} {
		if strings.Contains(form, ep.SigningSecret) || strings.Contains(form, ep.SigningSecret[6:]) {
			t.Errorf("the secret shows in %s", form)
		}
	}
	stored, err := f.svc.Get(context.Background(), account, ep.ID)
	if err != nil || stored.Secret.Reveal() != ep.SigningSecret {
		t.Errorf("the stored secret differs from the one shown (%v)", err)
	}
	for _, form := range []string{fmt.Sprintf("%v", stored), logLine(stored), string(must(json.Marshal(stored)))} {
		if strings.Contains(form, ep.SigningSecret[6:]) {
			t.Errorf("the secret shows in %s", form)
		}
	}
	other := f.create(t, "https://hooks.example.com/y", "queue.opened")
	if other.SigningSecret == ep.SigningSecret {
		t.Error("two endpoints share a secret")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func logLine(v any) string {
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, nil)).Info("x", "endpoint", v)
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "endpoint", v)
	return b.String()
}

func TestEndpointLimit(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	for range webhooks.MaxEndpoints {
		f.create(t, "https://hooks.example.com/x", "queue.opened")
	}
	u := "https://hooks.example.com/x"
	_, err := f.svc.Create(context.Background(), account, webhooks.CreateInput{URL: &u, Events: &[]string{"queue.opened"}})
	if !platform.IsCode(err, webhooks.CodeTooManyEndpoints) {
		t.Fatalf("want %s, got %v", webhooks.CodeTooManyEndpoints, err)
	}
}

func TestOneDeliveryPerSubscribedEndpointCommittedWithTheChange(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	a := f.create(t, "https://hooks.example.com/a", "queue.closed")
	b := f.create(t, "https://hooks.example.com/b", "queue.closed", "queue.opened")
	f.create(t, "https://hooks.example.com/c", "turn.created")

	if err := f.emit(t, "queue.closed", true); err == nil {
		t.Fatal("the failing change committed")
	}
	if jobs := f.jobs.Take(); len(jobs) != 0 {
		t.Fatalf("a rolled-back change scheduled %d jobs", len(jobs))
	}
	if ds, _ := f.svc.Deliveries(context.Background(), account); len(ds) != 0 {
		t.Fatalf("a rolled-back change left %d deliveries", len(ds))
	}

	if err := f.emit(t, "queue.closed", false); err != nil {
		t.Fatal(err)
	}
	jobs := f.jobs.Take()
	ds, _ := f.svc.Deliveries(context.Background(), account)
	if len(jobs) != 2 || len(ds) != 2 {
		t.Fatalf("want 2 jobs and 2 deliveries, got %d and %d", len(jobs), len(ds))
	}
	endpoints := map[string]bool{}
	for _, d := range ds {
		endpoints[d.EndpointID] = true
		if d.Status != webhooks.StatusPending || d.Attempts != 0 || d.NextAttemptAt != nil || d.LastError != nil {
			t.Errorf("a new delivery: %+v", d)
		}
	}
	if !endpoints[a.ID] || !endpoints[b.ID] {
		t.Errorf("deliveries went to %v", endpoints)
	}
	for _, j := range jobs {
		args := j.Args.(webhooks.AttemptArgs)
		if args.N != 1 || args.Token == "" || !j.RunAt.IsZero() {
			t.Errorf("first attempt job %+v", j)
		}
	}
}

func TestBodyShape(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	if err := f.emit(t, "queue.closed", false); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, one(t, f.jobs.Take())); err != nil {
		t.Fatal(err)
	}
	req := one(t, f.sender.requests())
	var got map[string]any
	if err := json.Unmarshal(req.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("body has %d members, want id, event, data, createdAt: %s", len(got), req.Body)
	}
	if got["id"] != req.DeliveryID || got["event"] != "queue.closed" || req.Event != "queue.closed" {
		t.Errorf("body %s for delivery %s", req.Body, req.DeliveryID)
	}
	if got["createdAt"] != "2026-03-01T09:00:00.000Z" {
		t.Errorf("createdAt %v", got["createdAt"])
	}
	data, _ := got["data"].(map[string]any)
	if data["queueRunId"] != "run_1" || data["queueId"] != "que_1" {
		t.Errorf("data %v", data)
	}
	if !strings.HasPrefix(string(req.Body), `{"id":`) {
		t.Errorf("members out of the spec's order: %s", req.Body)
	}
}

func TestSuccess(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	ep := f.create(t, "https://hooks.example.com/a", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	if err := f.run(t, one(t, f.jobs.Take())); err != nil {
		t.Fatal(err)
	}
	req := one(t, f.sender.requests())
	if req.URL != ep.URL || req.Signature != webhooks.Sign(webhooks.Secret(ep.SigningSecret), req.Body) {
		t.Errorf("request %+v", req)
	}
	if !strings.HasPrefix(req.Signature, "sha256=") || len(req.Signature) != 7+64 || strings.ToLower(req.Signature) != req.Signature {
		t.Errorf("signature %q", req.Signature)
	}
	d := f.delivery(t, req.DeliveryID)
	if d.Status != webhooks.StatusSucceeded || d.Attempts != 1 || d.LastResponseStatus == nil || *d.LastResponseStatus != 200 ||
		d.LastError != nil || d.NextAttemptAt != nil || d.LastAttemptAt == nil {
		t.Errorf("delivery after success: %+v", d)
	}
	if jobs := f.jobs.Take(); len(jobs) != 0 {
		t.Errorf("a success scheduled %d jobs", len(jobs))
	}
}

func TestFailureRetriesOnTheScheduleWithTheSameBody(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	f.sender.answers = []webhooks.Result{{Status: 500, Excerpt: []byte("boom\x00\n")}}
	_ = f.emit(t, "queue.closed", false)
	first := one(t, f.jobs.Take())
	if err := f.run(t, first); err != nil {
		t.Fatal(err)
	}
	req1 := one(t, f.sender.requests())
	d := f.delivery(t, req1.DeliveryID)
	if d.Status != webhooks.StatusFailed || d.Attempts != 1 || *d.LastResponseStatus != 500 || d.LastError == nil ||
		*d.LastError != "the receiver answered 500: boom" {
		t.Fatalf("after a 500: %+v (lastError %v)", d, deref(d.LastError))
	}
	next := one(t, f.jobs.Take())
	args := next.Args.(webhooks.AttemptArgs)
	lo, hi := f.clock.Now().Add(4500*time.Millisecond), f.clock.Now().Add(5500*time.Millisecond)
	if d.NextAttemptAt == nil || d.NextAttemptAt.Before(lo) || d.NextAttemptAt.After(hi) || !next.RunAt.Equal(*d.NextAttemptAt) || args.N != 2 {
		t.Fatalf("next attempt %+v at %v, delivery says %v", args, next.RunAt, d.NextAttemptAt)
	}

	// The first job runs again (a crash after it recorded): nothing happens.
	if err := f.run(t, first); err != nil || len(f.sender.requests()) != 1 || len(f.jobs.Take()) != 0 {
		t.Fatalf("the stale job acted: err %v, %d requests", err, len(f.sender.requests()))
	}

	f.clock.Advance(5 * time.Second)
	if err := f.run(t, next); err != nil {
		t.Fatal(err)
	}
	reqs := f.sender.requests()
	if len(reqs) != 2 || reqs[1].DeliveryID != req1.DeliveryID || !bytes.Equal(reqs[1].Body, req1.Body) || reqs[1].Signature != req1.Signature {
		t.Fatalf("the retry differs from the first attempt: %+v", reqs)
	}
	d = f.delivery(t, req1.DeliveryID)
	if d.Status != webhooks.StatusSucceeded || d.Attempts != 2 || d.NextAttemptAt != nil || d.LastError != nil || *d.LastResponseStatus != 200 {
		t.Fatalf("after the retry: %+v", d)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestScheduleExhausts(t *testing.T) {
	f := newFixture(t, webhooks.Options{Schedule: []time.Duration{time.Second, time.Minute}})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	f.sender.answers = []webhooks.Result{{Status: 503}, {Err: errors.New("connection refused")}, {Err: context.DeadlineExceeded}}
	_ = f.emit(t, "queue.closed", false)
	var id string
	for i, wantDelay := range []time.Duration{time.Second, time.Minute, 0} {
		job := one(t, f.jobs.Take())
		if err := f.run(t, job); err != nil {
			t.Fatal(err)
		}
		id = f.sender.requests()[i].DeliveryID
		d := f.delivery(t, id)
		if d.Status != webhooks.StatusFailed || d.Attempts != i+1 {
			t.Fatalf("attempt %d: %+v", i+1, d)
		}
		if wantDelay == 0 {
			if d.NextAttemptAt != nil {
				t.Fatalf("exhausted delivery still has a next attempt at %v", d.NextAttemptAt)
			}
			continue
		}
		if got := d.NextAttemptAt.Sub(f.clock.Now()); got < wantDelay*9/10 || got > wantDelay*11/10 {
			t.Fatalf("attempt %d: next in %v, want %v ±10%%", i+1, got, wantDelay)
		}
	}
	if jobs := f.jobs.Take(); len(jobs) != 0 {
		t.Fatalf("%d jobs after the last attempt", len(jobs))
	}
	d := f.delivery(t, id)
	if d.LastResponseStatus != nil || *d.LastError != "no response within 10s" {
		t.Errorf("after a timeout: status %v, error %q", d.LastResponseStatus, deref(d.LastError))
	}
}

func TestRetryDelaysFollowTheSchedule(t *testing.T) {
	total := time.Duration(0)
	for _, d := range webhooks.Schedule {
		total += d
	}
	if n := webhooks.MaxAttempts(webhooks.Schedule); n != 8 {
		t.Errorf("%d attempts, the docs publish 8", n)
	}
	if total < 24*time.Hour || total > 30*time.Hour {
		t.Errorf("the schedule spans %v, the docs say about 27.5 hours", total)
	}
}

func TestDeleteStopsPendingDeliveries(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	ep := f.create(t, "https://hooks.example.com/a", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	job := one(t, f.jobs.Take())
	if _, err := f.svc.Delete(context.Background(), "acc_2", ep.ID); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account deleted the endpoint: %v", err)
	}
	if _, err := f.svc.Delete(context.Background(), account, ep.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.run(t, job); err != nil {
		t.Fatal(err)
	}
	if n := len(f.sender.requests()); n != 0 {
		t.Fatalf("%d requests after the endpoint was deleted", n)
	}
	if ds, _ := f.svc.Deliveries(context.Background(), account); len(ds) != 0 {
		t.Fatalf("%d deliveries left", len(ds))
	}
	if _, err := f.svc.Delete(context.Background(), account, ep.ID); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDeleteDuringAnAttemptRecordsNothing(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	ep := f.create(t, "https://hooks.example.com/a", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	job := one(t, f.jobs.Take())
	f.sender.block = make(chan struct{})
	done := make(chan error)
	go func() { done <- f.run(t, job) }()
	waitFor(t, func() bool { return len(f.sender.requests()) == 1 })
	if _, err := f.svc.Delete(context.Background(), account, ep.ID); err != nil {
		t.Fatal(err)
	}
	close(f.sender.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ds, _ := f.svc.Deliveries(context.Background(), account); len(ds) != 0 {
		t.Fatalf("the deleted delivery came back: %+v", ds)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRedeliver(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	if err := f.run(t, one(t, f.jobs.Take())); err != nil {
		t.Fatal(err)
	}
	id := one(t, f.sender.requests()).DeliveryID

	if _, err := f.svc.Redeliver(context.Background(), "acc_2", id); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("another account redelivered: %v", err)
	}
	if _, err := f.svc.Redeliver(context.Background(), account, "dlv_nope"); !platform.IsCode(err, platform.CodeNotFound) {
		t.Fatalf("redeliver of nothing: %v", err)
	}
	f.sender.answers = []webhooks.Result{{Status: 410}}
	if _, err := f.svc.Redeliver(context.Background(), account, id); err != nil {
		t.Fatal(err)
	}
	job := one(t, f.jobs.Take())
	if args := job.Args.(webhooks.AttemptArgs); args.Token != "" || args.N != 0 {
		t.Fatalf("redelivery job %+v", args)
	}
	if err := f.run(t, job); err != nil {
		t.Fatal(err)
	}
	reqs := f.sender.requests()
	if len(reqs) != 2 || reqs[1].DeliveryID != id || !bytes.Equal(reqs[0].Body, reqs[1].Body) {
		t.Fatalf("requests %+v", reqs)
	}
	d := f.delivery(t, id)
	if d.Attempts != 2 || d.Status != webhooks.StatusFailed || *d.LastResponseStatus != 410 || d.NextAttemptAt != nil {
		t.Fatalf("after a failed redelivery: %+v", d)
	}
	if jobs := f.jobs.Take(); len(jobs) != 0 {
		t.Fatalf("a failed redelivery scheduled %d retries", len(jobs))
	}
}

func TestRedeliverySuccessEndsTheSchedule(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	f.sender.answers = []webhooks.Result{{Status: 500}}
	_ = f.emit(t, "queue.closed", false)
	_ = f.run(t, one(t, f.jobs.Take()))
	retry := one(t, f.jobs.Take())
	id := retry.Args.(webhooks.AttemptArgs).DeliveryID
	if _, err := f.svc.Redeliver(context.Background(), account, id); err != nil {
		t.Fatal(err)
	}
	_ = f.run(t, one(t, f.jobs.Take()))
	if d := f.delivery(t, id); d.Status != webhooks.StatusSucceeded || d.NextAttemptAt != nil {
		t.Fatalf("after a successful redelivery: %+v", d)
	}
	_ = f.run(t, retry)
	if n := len(f.sender.requests()); n != 2 {
		t.Fatalf("the retry still ran after the redelivery succeeded: %d requests", n)
	}
}

func TestSlowEndpointDoesNotHoldWorkers(t *testing.T) {
	f := newFixture(t, webhooks.Options{MaxInFlight: 1})
	slow := f.create(t, "https://hooks.example.com/slow", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	_ = f.emit(t, "queue.closed", false)
	jobs := f.jobs.Take()
	f.sender.block = make(chan struct{})
	done := make(chan error)
	go func() { done <- f.run(t, jobs[0]) }()
	waitFor(t, func() bool { return f.svc.InFlight(slow.ID) == 1 })

	start := time.Now()
	if err := f.run(t, jobs[1]); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("the second attempt waited %v for the slow endpoint", waited)
	}
	put := one(t, f.jobs.Take())
	if put.Args != jobs[1].Args || put.RunAt.Sub(f.clock.Now()) < time.Second || put.RunAt.Sub(f.clock.Now()) > 2*time.Second {
		t.Fatalf("the attempt was not put off by 1-2s: %+v", put)
	}
	if n := len(f.sender.requests()); n != 1 {
		t.Fatalf("%d requests, want the slow one only", n)
	}
	d := f.delivery(t, jobs[1].Args.(webhooks.AttemptArgs).DeliveryID)
	if d.Attempts != 0 || d.Status != webhooks.StatusPending {
		t.Fatalf("a put-off attempt counted: %+v", d)
	}
	close(f.sender.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.svc.InFlight(slow.ID) != 0 {
		t.Fatal("the slot was not released")
	}
}

func TestShutdownDuringAnAttemptLeavesItForTheRunner(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	_ = f.emit(t, "queue.closed", false)
	job := one(t, f.jobs.Take())
	f.sender.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.svc.Attempt(ctx, job.Args.(webhooks.AttemptArgs)) }()
	waitFor(t, func() bool { return len(f.sender.requests()) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want the cancellation back, got %v", err)
	}
	d := f.delivery(t, job.Args.(webhooks.AttemptArgs).DeliveryID)
	if d.Attempts != 0 || d.Status != webhooks.StatusPending || len(f.jobs.Take()) != 0 {
		t.Fatalf("an interrupted attempt was recorded: %+v", d)
	}
	f.sender.block = nil
	if err := f.run(t, job); err != nil {
		t.Fatal(err)
	}
	if d := f.delivery(t, d.ID); d.Status != webhooks.StatusSucceeded {
		t.Fatalf("the job run again: %+v", d)
	}
}

func TestRedirectIsAFailure(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	f.sender.answers = []webhooks.Result{{Status: 302}}
	_ = f.emit(t, "queue.closed", false)
	_ = f.run(t, one(t, f.jobs.Take()))
	d := f.delivery(t, one(t, f.sender.requests()).DeliveryID)
	if d.Status != webhooks.StatusFailed || !strings.Contains(*d.LastError, "redirects are not followed") {
		t.Fatalf("after a 302: %+v", d)
	}
}

func TestLongErrorsAreCut(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed")
	f.sender.answers = []webhooks.Result{{Status: 500, Excerpt: []byte(strings.Repeat("é", 400))}}
	_ = f.emit(t, "queue.closed", false)
	_ = f.run(t, one(t, f.jobs.Take()))
	d := f.delivery(t, one(t, f.sender.requests()).DeliveryID)
	if len(*d.LastError) > 310 || !strings.HasSuffix(*d.LastError, "…") {
		t.Fatalf("lastError of %d bytes: %q", len(*d.LastError), *d.LastError)
	}
}

func TestDeliveriesNewestFirstAndScoped(t *testing.T) {
	f := newFixture(t, webhooks.Options{})
	f.create(t, "https://hooks.example.com/a", "queue.closed", "queue.opened")
	for i := 0; i < webhooks.RecentDeliveries+5; i++ {
		_ = f.emit(t, []string{"queue.closed", "queue.opened"}[i%2], false)
	}
	ds, err := f.svc.Deliveries(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != webhooks.RecentDeliveries {
		t.Fatalf("%d deliveries listed", len(ds))
	}
	for i := 1; i < len(ds); i++ {
		if ds[i-1].ID <= ds[i].ID {
			t.Fatalf("not newest first at %d: %s then %s", i, ds[i-1].ID, ds[i].ID)
		}
	}
	if other, _ := f.svc.Deliveries(context.Background(), "acc_2"); len(other) != 0 {
		t.Fatalf("another account sees %d deliveries", len(other))
	}
}
