package webhookclient_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/adapters/webhookclient"
	"github.com/qms-dev/qms/core/webhooks"
)

func request(url string) webhooks.Request {
	return webhooks.Request{URL: url, Event: "queue.closed", DeliveryID: "dlv_1",
		Body:      []byte(`{"id":"dlv_1","event":"queue.closed","data":{},"createdAt":"2026-03-01T09:00:00.000Z"}`),
		Signature: "sha256=abc"}
}

func TestSendsTheRequest(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("thanks"))
	}))
	defer srv.Close()
	c := webhookclient.New(webhookclient.Options{AllowPrivate: true})
	r := request(srv.URL + "/hook?x=1")
	res := c.Send(context.Background(), r)
	if res.Err != nil || res.Status != 202 || string(res.Excerpt) != "thanks" {
		t.Fatalf("result %+v", res)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/hook" || got.URL.RawQuery != "x=1" {
		t.Fatalf("request %s %s", got.Method, got.URL)
	}
	for h, want := range map[string]string{
		"Content-Type": "application/json", "X-Service-Event": "queue.closed",
		"X-Service-Delivery": "dlv_1", "X-Service-Signature": "sha256=abc",
	} {
		if got.Header.Get(h) != want {
			t.Errorf("%s: %q, want %q", h, got.Header.Get(h), want)
		}
	}
	if string(body) != string(r.Body) {
		t.Errorf("body %s", body)
	}
}

func TestRefusesPrivateAddressesWhenDialling(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := webhookclient.New(webhookclient.Options{})
	// An IP literal, and a name that resolves to loopback: the check sees
	// the address dialled, whatever the url said.
	for _, u := range []string{srv.URL, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		res := c.Send(context.Background(), request(u))
		var blocked *webhookclient.BlockedAddressError
		if !errors.As(res.Err, &blocked) || !strings.Contains(res.Err.Error(), "SSRF") {
			t.Errorf("%s: want a refused dial, got %+v", u, res)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

func TestDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	res := webhookclient.New(webhookclient.Options{AllowPrivate: true}).Send(context.Background(), request(srv.URL))
	if res.Err != nil || res.Status != http.StatusTemporaryRedirect || followed.Load() {
		t.Fatalf("result %+v, followed %v", res, followed.Load())
	}
}

func TestReadsOnlyAnExcerpt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer srv.Close()
	res := webhookclient.New(webhookclient.Options{AllowPrivate: true, MaxExcerpt: 100}).Send(context.Background(), request(srv.URL))
	if res.Status != 500 || len(res.Excerpt) != 100 {
		t.Fatalf("status %d, excerpt of %d bytes", res.Status, len(res.Excerpt))
	}
}

func TestTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	c := webhookclient.New(webhookclient.Options{AllowPrivate: true, Timeout: 300 * time.Millisecond})
	start := time.Now()
	res := c.Send(context.Background(), request(srv.URL))
	if !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline, got %+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cut after %v", d)
	}
	// The caller's deadline counts as well.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res = webhookclient.New(webhookclient.Options{AllowPrivate: true}).Send(ctx, request(srv.URL))
	if !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline, got %+v", res)
	}
}

func TestConnectionErrorsAreReported(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	res := webhookclient.New(webhookclient.Options{AllowPrivate: true}).Send(context.Background(), request("http://"+addr))
	if res.Err == nil || strings.Contains(res.Err.Error(), "Post ") || !strings.Contains(res.Err.Error(), "refused") {
		t.Fatalf("result %+v", res)
	}
}
