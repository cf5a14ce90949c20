package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// checkedTransport hands every JSON exchange the SDK makes to apptest.Check
// (the OpenAPI harness this package installs), so the SDK's traffic is held
// to the document like every other exchange of the suite.
type checkedTransport struct{ t testing.TB }

func (c checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || apptest.Check == nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	apptest.Check(c.t, req, &apptest.Response{T: c.t, Status: resp.StatusCode, Header: resp.Header, Body: body})
	return resp, nil
}

func sdkHTTP(t testing.TB) client.ClientOption {
	return client.WithHTTPClient(&http.Client{Transport: checkedTransport{t}})
}

// TestSDKEndToEnd runs a day at the counter through the Go SDK on each
// storage: an account and key from the admin API, a queue, turns through
// dispatch, the live stream, the polled stream, a display board, and the
// SDK's typed errors.
func TestSDKEndToEnd(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		admin := client.NewAdmin(app.BaseURL, apptest.AdminToken, sdkHTTP(t))
		acc, err := admin.CreateAccount(ctx, client.AdminCreateAccountRequest{Name: "SDK Pharmacy", Plan: "premium"})
		if err != nil {
			t.Fatal(err)
		}
		key, err := admin.CreateAPIKey(ctx, acc.ID, client.AdminCreateAPIKeyRequest{Scopes: []client.Scope{
			"queues:write", "turns:write", "dispatch:write", "entities:write"}})
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(app.BaseURL, key.Key, sdkHTTP(t))

		events, err := c.SubscribeEvents(ctx, client.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer events.Close()
		first, err := c.PollEvents(ctx, client.PollEventsParams{})
		if err != nil || len(first.Data) != 0 || first.Cursor == "" {
			t.Fatalf("first poll: %+v %v", first, err)
		}

		ent, err := c.CreateEntity(ctx, client.EntityCreate{Name: "Centro"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "Pharmacy", Type: "TURN",
			Stations: []client.StationInput{{Label: "Window 1"}}})
		if err != nil {
			t.Fatal(err)
		}
		run, station := q.Runs[0].ID, q.Stations[0]

		// A create the SDK gives an idempotency key; the same key again
		// returns the same turn.
		turn, err := c.CreateTurn(ctx, run, client.TurnCreate{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.CreateTurn(ctx, run, client.TurnCreate{IdempotencyKey: client.Ptr("order-000042")})
		if err != nil {
			t.Fatal(err)
		}
		same, err := c.CreateTurn(ctx, run, client.TurnCreate{IdempotencyKey: client.Ptr("order-000042")})
		if err != nil || same.ID != again.ID || again.ID == turn.ID {
			t.Fatalf("idempotent create: %v, %s then %s (first %s)", err, again.ID, same.ID, turn.ID)
		}
		if turn.Status != client.TurnStatusWaiting || turn.WaitEstimate == nil || turn.WaitEstimate.Range != nil {
			t.Fatalf("new turn %+v", turn)
		}

		called, err := c.CallTurn(ctx, turn.ID, client.TurnCall{StationID: client.Value(station.ID)})
		if err != nil || called.Status != client.TurnStatusCalled || called.Station == nil || called.Station.Label != "Window 1" {
			t.Fatalf("call: %+v %v", called, err)
		}
		if _, err := c.StartTurn(ctx, turn.ID); err != nil {
			t.Fatal(err)
		}
		done, err := c.CompleteTurn(ctx, turn.ID)
		if err != nil || done.Status != client.TurnStatusCompleted {
			t.Fatalf("complete: %+v %v", done, err)
		}
		list, err := c.ListTurns(ctx, run, &client.ListTurnsParams{Status: client.Ptr("COMPLETED")})
		if err != nil || len(list.Data) != 1 || list.Data[0].ID != turn.ID || list.Pagination.NextCursor != nil {
			t.Fatalf("list: %+v %v", list, err)
		}

		// The stream saw it all, in order.
		want := []string{"queue.opened " + run, "turn.created " + turn.ID, "turn.created " + again.ID, "turn.called " + turn.ID, "turn.completed " + turn.ID}
		for i, w := range want {
			ev, err := events.Next(ctx)
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			subject, _ := ev.Data["turnId"].(string)
			if subject == "" {
				subject, _ = ev.Data["queueRunId"].(string)
			}
			if got := string(ev.Event) + " " + subject; got != w || ev.ID != events.LastEventID() {
				t.Fatalf("event %d: %s (id %s, last %s), want %s", i, got, ev.ID, events.LastEventID(), w)
			}
		}
		page, err := c.PollEvents(ctx, client.PollEventsParams{Cursor: first.Cursor})
		if err != nil || len(page.Data) != len(want) || page.Data[len(want)-1].ID != events.LastEventID() {
			t.Fatalf("poll: %d events, %v", len(page.Data), err)
		}

		// A display board, live, until its token is revoked.
		tok, err := c.CreateDisplayToken(ctx, run, client.DisplayTokenCreate{Label: client.Ptr("Lobby")})
		if err != nil {
			t.Fatal(err)
		}
		board, err := c.SubscribeDisplayBoard(ctx, tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		defer board.Close()
		if u, err := board.Next(ctx); err != nil || u.Trigger != nil || u.Board.Queue.Name != "Pharmacy" || len(u.Board.Recent) != 1 {
			t.Fatalf("first board: %+v %v", u, err)
		}
		next, err := c.DispatchNext(ctx, run, client.TurnCall{StationID: client.Value(station.ID)})
		if err != nil || next.ID != again.ID {
			t.Fatalf("dispatch/next: %v", err)
		}
		u, err := board.Next(ctx)
		if err != nil || u.Trigger == nil || u.Trigger.Event != "turn.called" || u.Trigger.TurnID != again.ID ||
			len(u.Board.Calling) != 1 || u.Board.Calling[0].Station == nil {
			t.Fatalf("board after the call: %+v %v", u, err)
		}
		if b, err := c.GetDisplayBoard(ctx, tok.Token); err != nil || b.Calling[0].DisplayCode != next.DisplayCode {
			t.Fatalf("GetDisplayBoard: %+v %v", b, err)
		}
		if _, err := c.RevokeDisplayToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := board.Next(ctx); !errors.Is(err, client.ErrRevoked) {
			t.Fatalf("after revoking: %v", err)
		}

		// Typed errors: code, status, details, request id.
		if _, err := c.CloseRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateTurn(ctx, run, client.TurnCreate{})
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Code != "QUEUE_CLOSED" || apiErr.RequestID == "" ||
			apiErr.Details["queueRunId"] != run {
			t.Fatalf("create in a closed run: %#v", err)
		}
		_, err = c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "X", Type: "TURN"})
		if !errors.As(err, &apiErr) || apiErr.Code != "VALIDATION_ERROR" || len(apiErr.FieldErrors()) != 1 || apiErr.FieldErrors()[0].Path != "name" {
			t.Fatalf("a one-letter name: %#v", err)
		}
		_, err = c.ListWebhookEndpoints(ctx, nil)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "INSUFFICIENT_SCOPE" || apiErr.Details["requiredScope"] != "webhooks:read" {
			t.Fatalf("without webhooks:read: %#v", err)
		}
		if _, err := c.SubscribeEvents(ctx, client.StreamOptions{RunID: "run_nope"}); !client.IsCode(err, "NOT_FOUND") {
			t.Fatalf("stream of an unknown run: %v", err)
		}
	})
}

// TestSDKStreamReconnectsWithoutLoss cuts the SDK's stream connection (a
// proxy in between drops it) while events commit: the stream reconnects by
// itself with Last-Event-ID and delivers every event once, in order.
func TestSDKStreamReconnectsWithoutLoss(t *testing.T) {
	app := apptest.Memory(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	target, _ := url.Parse(app.BaseURL)
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		FlushInterval: -1,
	})
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(proxy.URL, app.Key, sdkHTTP(t))
	q := newLiveQueue(t, app, "Pharmacy", nil)
	s, err := c.SubscribeEvents(ctx, client.StreamOptions{RunID: q.RunID})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []string
	take := func() {
		turn, err := c.CreateTurn(ctx, q.RunID, client.TurnCreate{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, turn.ID)
	}
	take()
	if ev, err := s.Next(ctx); err != nil || ev.Data["turnId"] != want[0] {
		t.Fatalf("first: %v %v", ev.Data, err)
	}
	proxy.CloseClientConnections() // the stream drops
	take()
	take()
	for _, id := range want[1:] {
		ev, err := s.Next(ctx)
		if err != nil || ev.Data["turnId"] != id {
			t.Fatalf("after reconnecting, want %s: %v %v", id, ev.Data, err)
		}
	}
	take()
	if ev, err := s.Next(ctx); err != nil || ev.Data["turnId"] != want[3] {
		t.Fatalf("live again: %v %v", ev.Data, err)
	}
}
