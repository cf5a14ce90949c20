package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// The queue options of spec 2.1 that issue 31 made real, each on and off
// through the API, on each storage (docs/queues.md names these tests).

// eventsSince returns the events of the run raised after cursor (the
// polled form of /events/stream) and the cursor to go on from.
func eventsSince(t *testing.T, app *apptest.App, runID, cursor string) ([]streamMessage, string) {
	t.Helper()
	var out []streamMessage
	for {
		var p struct {
			Data    []streamMessage
			Cursor  string
			HasMore bool
		}
		path := "/events/stream?limit=200&runId=" + runID
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		app.API(http.MethodGet, path, nil).Must(http.StatusOK, &p)
		out = append(out, p.Data...)
		cursor = p.Cursor
		if !p.HasMore {
			return out, cursor
		}
	}
}

func eventNames(ms []streamMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Event)
	}
	return out
}

type helpRequest struct {
	ID, TurnID, QueueID, QueueRunID, DisplayCode, Status string
	Reply                                                *string
	AnsweredAt                                           *string
}

// TestHelpRequests: a queue with help.enabled lets the customer ask for
// help on the ticket page (turn.help_requested, once however often the
// button is pressed while the request is open); staff list the run's open
// requests and answer with one of the quickReplies (anything else is 422
// naming reply; turn.help_answered); the ticket shows the reply. With help
// off the page offers nothing and asking is 409 HELP_DISABLED.
func TestHelpRequests(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))

		// Off (the default): nothing offered, asking refused.
		off := newLiveQueue(t, app, "No help", nil)
		offTurn, _ := takeTicketTurn(t, app, off.RunID, map[string]any{})
		offLink := newTicketLink(t, app, offTurn, nil)
		if r, tk := readTicket(t, app, offLink.Token); r.Status != http.StatusOK || tk.Help != nil {
			t.Fatalf("help off: ticket %s", r.Body)
		}
		if r := app.Do(http.MethodPost, "/ticket/"+offLink.Token+"/help", nil, nil); r.Status != http.StatusConflict || r.ErrorCode() != "HELP_DISABLED" {
			t.Fatalf("help off: ask %d %s", r.Status, r.Body)
		}

		// On.
		q := newLiveQueue(t, app, "Help desk", map[string]any{
			"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}}})
		_, cursor := eventsSince(t, app, q.RunID, "")
		turnID, code := takeTicketTurn(t, app, q.RunID, map[string]any{})
		link := newTicketLink(t, app, turnID, nil)
		r, tk := readTicket(t, app, link.Token)
		if r.Status != http.StatusOK || tk.Help == nil || !tk.Help.Available || tk.Help.Request != nil {
			t.Fatalf("help on, not asked: %s", r.Body)
		}
		for i := 0; i < 3; i++ { // pressed three times: one request
			r := app.Do(http.MethodPost, "/ticket/"+link.Token+"/help", nil, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("ask %d: %d %s", i, r.Status, r.Body)
			}
		}
		_, tk = readTicket(t, app, link.Token)
		if tk.Help == nil || tk.Help.Available || tk.Help.Request == nil || tk.Help.Request.Status != "OPEN" || tk.Help.Request.Reply != nil {
			t.Fatalf("asked: %+v", tk.Help)
		}

		var open struct{ Data []helpRequest }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=OPEN", nil).Must(http.StatusOK, &open)
		if len(open.Data) != 1 || open.Data[0].TurnID != turnID || open.Data[0].DisplayCode != code || open.Data[0].Status != "OPEN" ||
			open.Data[0].QueueID != q.ID || open.Data[0].QueueRunID != q.RunID {
			t.Fatalf("open requests %+v", open.Data)
		}
		h := open.Data[0]

		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "Go away"}); r.Status != http.StatusUnprocessableEntity ||
			r.ErrorCode() != "NOT_A_QUICK_REPLY" || r.JSON()["error"].(map[string]any)["details"].(map[string]any)["field"] != "reply" {
			t.Fatalf("a reply not among quickReplies: %d %s", r.Status, r.Body)
		}
		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{}); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" {
			t.Fatalf("no reply: %d %s", r.Status, r.Body)
		}
		var answered helpRequest
		app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}).Must(http.StatusCreated, &answered)
		if answered.Status != "ANSWERED" || answered.Reply == nil || *answered.Reply != "On my way" || answered.AnsweredAt == nil {
			t.Fatalf("answered %+v", answered)
		}
		app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}).Must(http.StatusCreated, nil)
		if r := app.API(http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "Please come to the counter"}); r.Status != http.StatusConflict || r.ErrorCode() != "HELP_ALREADY_ANSWERED" {
			t.Fatalf("answered twice: %d %s", r.Status, r.Body)
		}
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=OPEN", nil).Must(http.StatusOK, &open)
		if len(open.Data) != 0 {
			t.Fatalf("open after the answer: %+v", open.Data)
		}
		_, tk = readTicket(t, app, link.Token)
		if tk.Help == nil || !tk.Help.Available || tk.Help.Request == nil || tk.Help.Request.Status != "ANSWERED" ||
			tk.Help.Request.Reply == nil || *tk.Help.Request.Reply != "On my way" {
			t.Fatalf("ticket after the answer: %+v", tk.Help)
		}
		var ofTurn struct{ Data []helpRequest }
		app.API(http.MethodGet, "/turns/"+turnID+"/help-requests", nil).Must(http.StatusOK, &ofTurn)
		if len(ofTurn.Data) != 1 || ofTurn.Data[0].ID != h.ID {
			t.Fatalf("the turn's requests %+v", ofTurn.Data)
		}

		evs, _ := eventsSince(t, app, q.RunID, cursor)
		var helpEvents []streamMessage
		for _, m := range evs {
			if m.Event == "turn.help_requested" || m.Event == "turn.help_answered" {
				helpEvents = append(helpEvents, m)
			}
		}
		if len(helpEvents) != 2 || helpEvents[0].Event != "turn.help_requested" || helpEvents[1].Event != "turn.help_answered" ||
			helpEvents[0].Data["turnId"] != turnID || helpEvents[0].Data["displayCode"] != code || helpEvents[0].Data["helpRequestId"] != h.ID ||
			helpEvents[1].Data["reply"] != "On my way" {
			t.Fatalf("help events %+v (all: %v)", helpEvents, eventNames(evs))
		}

		// Another account sees none of it.
		_, otherKey := app.NewAccount("premium", "all")
		if r := app.APIWith(otherKey, http.MethodPost, "/help-requests/"+h.ID+"/answer", map[string]any{"reply": "On my way"}); r.Status != http.StatusForbidden {
			t.Fatalf("another account answers: %d %s", r.Status, r.Body)
		}
		if r := app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/help-requests?status=LOST", nil); r.Status != http.StatusBadRequest {
			t.Fatalf("a bad status filter: %d %s", r.Status, r.Body)
		}

		// A finished turn asks no more.
		app.API(http.MethodPost, "/turns/"+turnID+"/cancel", nil).Must(http.StatusCreated, nil)
		if r := app.Do(http.MethodPost, "/ticket/"+link.Token+"/help", nil, nil); r.Status != http.StatusConflict || r.ErrorCode() != "TURN_FINISHED" {
			t.Fatalf("finished: ask %d %s", r.Status, r.Body)
		}
	})
}

type turnOut struct {
	ID, QueueID, QueueRunID, DisplayCode, Status, Priority string
	FormResponse                                           map[string]string
}

// TestTransferEnabled: a queue with transferEnabled lets staff move a turn
// to another turn queue by hand (POST /turns/{id}/transfer): the turn is
// cancelled with reason "transferred" and a turn with its code, priority
// and answers waits in the destination. Off (the default) the transfer is
// 409 TRANSFER_DISABLED and the turn stays; forward through a link works
// either way (v1 compatibility). Bad destinations are named on queueId; a
// destination refusing the turn leaves the source as it was.
func TestTransferEnabled(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		off := newLiveQueue(t, app, "Reception", map[string]any{"turnPrefix": "R"})
		on := newLiveQueue(t, app, "Triage", map[string]any{"transferEnabled": true, "turnPrefix": "T",
			"preAttention": map[string]any{"questions": []any{map[string]any{"id": "reason", "label": "Reason"}}}})
		dest := newLiveQueue(t, app, "Cashier", nil)

		// Off: refused, the turn stays; a link still forwards.
		stay, _ := takeTicketTurn(t, app, off.RunID, map[string]any{})
		if r := app.API(http.MethodPost, "/turns/"+stay+"/transfer", map[string]any{"queueId": dest.ID}); r.Status != http.StatusConflict || r.ErrorCode() != "TRANSFER_DISABLED" {
			t.Fatalf("transfer with transferEnabled off: %d %s", r.Status, r.Body)
		}
		var still turnOut
		app.API(http.MethodGet, "/turns/"+stay, nil).Must(http.StatusOK, &still)
		if still.Status != "WAITING" || still.QueueID != off.ID {
			t.Fatalf("refused transfer moved the turn: %+v", still)
		}
		var link struct{ ID string }
		app.API(http.MethodPost, "/queue-links", map[string]any{"fromQueueDefinitionId": off.ID, "toQueueDefinitionId": dest.ID,
			"trigger": "manual"}).Must(http.StatusCreated, &link)
		var fw struct{ Status string }
		app.API(http.MethodPost, "/turns/"+stay+"/forward", map[string]any{"linkId": link.ID}).Must(http.StatusCreated, &fw)
		if fw.Status != "FORWARDED" {
			t.Fatalf("forward with transferEnabled off: %+v", fw)
		}

		// On.
		_, cursor := eventsSince(t, app, on.RunID, "")
		var src turnOut
		app.API(http.MethodPost, "/queue-runs/"+on.RunID+"/turns", map[string]any{"formResponse": map[string]any{"reason": "bills"}}).
			Must(http.StatusCreated, &src)
		app.API(http.MethodPost, "/turns/"+src.ID+"/priority", map[string]any{"priority": "HIGH"}).Must(http.StatusCreated, nil)
		app.API(http.MethodPost, "/turns/"+src.ID+"/call", map[string]any{}).Must(http.StatusCreated, nil)

		for _, c := range []struct {
			body      map[string]any
			status    int
			code, why string
		}{
			{map[string]any{}, http.StatusBadRequest, "VALIDATION_ERROR", "no queueId"},
			{map[string]any{"queueId": on.ID}, http.StatusUnprocessableEntity, "SAME_QUEUE", "its own queue"},
			{map[string]any{"queueId": "que_nothere"}, http.StatusUnprocessableEntity, "QUEUE_NOT_FOUND", "an unknown queue"},
		} {
			r := app.API(http.MethodPost, "/turns/"+src.ID+"/transfer", c.body)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("%s: %d %s", c.why, r.Status, r.Body)
			}
			if c.status == http.StatusUnprocessableEntity && r.JSON()["error"].(map[string]any)["details"].(map[string]any)["field"] != "queueId" {
				t.Fatalf("%s: details name no field: %s", c.why, r.Body)
			}
		}
		otherAcc, otherKey := app.NewAccount("premium", "all")
		_ = otherAcc
		var ent struct{ ID string }
		app.APIWith(otherKey, http.MethodPost, "/entities", map[string]any{"name": "Elsewhere"}).Must(http.StatusCreated, &ent)
		var foreign struct{ ID string }
		app.APIWith(otherKey, http.MethodPost, "/queues", map[string]any{"entityId": ent.ID, "name": "Theirs", "type": "TURN"}).
			Must(http.StatusCreated, &foreign)
		if r := app.API(http.MethodPost, "/turns/"+src.ID+"/transfer", map[string]any{"queueId": foreign.ID}); r.Status != http.StatusForbidden {
			t.Fatalf("another account's queue: %d %s", r.Status, r.Body)
		}
		// The destination refuses (intake closed): nothing changes.
		app.API(http.MethodPost, "/queue-runs/"+dest.RunID+"/close-intake", nil).Must(http.StatusCreated, nil)
		if r := app.API(http.MethodPost, "/turns/"+src.ID+"/transfer", map[string]any{"queueId": dest.ID}); r.Status != http.StatusConflict || r.ErrorCode() != "INTAKE_CLOSED" {
			t.Fatalf("destination intake closed: %d %s", r.Status, r.Body)
		}
		app.API(http.MethodGet, "/turns/"+src.ID, nil).Must(http.StatusOK, &still)
		if still.Status != "CALLED" {
			t.Fatalf("a refused transfer changed the turn: %+v", still)
		}
		app.API(http.MethodPost, "/queue-runs/"+dest.RunID+"/open-intake", nil).Must(http.StatusCreated, nil)

		var moved struct{ From, To turnOut }
		app.API(http.MethodPost, "/turns/"+src.ID+"/transfer", map[string]any{"queueId": dest.ID}).Must(http.StatusCreated, &moved)
		if moved.From.ID != src.ID || moved.From.Status != "CANCELLED" || moved.To.QueueID != dest.ID || moved.To.QueueRunID != dest.RunID ||
			moved.To.Status != "WAITING" || moved.To.DisplayCode != src.DisplayCode || moved.To.Priority != "HIGH" ||
			moved.To.FormResponse["reason"] != "bills" {
			t.Fatalf("transferred %+v (source %+v)", moved, src)
		}
		evs, _ := eventsSince(t, app, on.RunID, cursor)
		var reason any
		for _, m := range evs {
			if m.Event == "turn.cancelled" && m.Data["turnId"] == src.ID {
				reason = m.Data["reason"]
			}
		}
		if reason != "transferred" {
			t.Fatalf("turn.cancelled of the source: reason %v (events %v)", reason, eventNames(evs))
		}
		// A finished turn is not transferred.
		if r := app.API(http.MethodPost, "/turns/"+src.ID+"/transfer", map[string]any{"queueId": dest.ID}); r.Status != http.StatusConflict || r.ErrorCode() != "INVALID_TRANSITION" {
			t.Fatalf("transfer of a cancelled turn: %d %s", r.Status, r.Body)
		}
	})
}

// waitEvents polls the run's events until want of name have come or d
// passes; it returns those of name.
func waitEvents(t *testing.T, app *apptest.App, runID, cursor, name string, want int, d time.Duration) []streamMessage {
	t.Helper()
	var got []streamMessage
	deadline := time.Now().Add(d)
	for {
		var evs []streamMessage
		evs, cursor = eventsSince(t, app, runID, cursor)
		for _, m := range evs {
			if m.Event == name {
				got = append(got, m)
			}
		}
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type slaShare struct {
	TargetMinutes *int
	Measured      int
	Within        int
	Share         *float64
}

type slaShares struct{ Wait, Service *slaShare }

func wantShare(t *testing.T, what string, got *slaShare, target *int, measured, within int) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no share", what)
	}
	if (got.TargetMinutes == nil) != (target == nil) || target != nil && *got.TargetMinutes != *target ||
		got.Measured != measured || got.Within != within {
		t.Fatalf("%s: %+v, want target %v, %d of %d", what, *got, target, within, measured)
	}
	if measured > 0 && (got.Share == nil || *got.Share != float64(within)/float64(measured)) {
		t.Fatalf("%s: share %v", what, got.Share)
	}
}

// TestSLA: a turn waiting past its queue's sla.maxWaitMinutes raises
// turn.sla_breached once (a scheduled job: River in PostgreSQL mode, the
// in-process runner in memory mode) and the board counts it over the
// target; analytics' summary and dashboard give the share of turns called
// within maxWaitMinutes and served within maxServiceMinutes, per queue and
// in total; a queue without targets has sla null and raises nothing.
func TestSLA(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		strict := newLiveQueue(t, app, "Strict", map[string]any{"sla": map[string]any{"maxWaitMinutes": 0, "maxServiceMinutes": 0}})
		easy := newLiveQueue(t, app, "Easy", nil)
		var qv struct {
			SLA struct{ MaxWaitMinutes, MaxServiceMinutes *int }
		}
		app.API(http.MethodPut, "/queues/"+easy.ID+"/sla", map[string]any{"maxWaitMinutes": 30, "maxServiceMinutes": 30}).Must(http.StatusOK, &qv)
		if qv.SLA.MaxWaitMinutes == nil || *qv.SLA.MaxWaitMinutes != 30 {
			t.Fatalf("PUT sla: %+v", qv)
		}
		none := newLiveQueue(t, app, "No targets", nil)
		_, noneCursor := eventsSince(t, app, none.RunID, "")

		// A turn waiting past 0 minutes: one event, and the board counts it.
		_, cursor := eventsSince(t, app, strict.RunID, "")
		late, code := takeTicketTurn(t, app, strict.RunID, map[string]any{})
		got := waitEvents(t, app, strict.RunID, cursor, "turn.sla_breached", 1, 20*time.Second)
		if len(got) != 1 || got[0].Data["turnId"] != late || got[0].Data["displayCode"] != code || got[0].Data["maxWaitMinutes"] != float64(0) ||
			got[0].Data["status"] != "WAITING" {
			t.Fatalf("sla events %+v", got)
		}
		time.Sleep(500 * time.Millisecond)
		if again := waitEvents(t, app, strict.RunID, cursor, "turn.sla_breached", 2, 0); len(again) != 1 {
			t.Fatalf("raised %d times, want once", len(again))
		}
		tok := newDisplayToken(t, app, strict.RunID)
		r := app.Do(http.MethodGet, "/display/"+tok.Token+"/board", nil, nil)
		var board struct {
			Waiting struct {
				OverSLA        *int `json:"overSla"`
				MaxWaitMinutes *int
			}
		}
		r.Decode(&board)
		if board.Waiting.OverSLA == nil || *board.Waiting.OverSLA != 1 || board.Waiting.MaxWaitMinutes == nil || *board.Waiting.MaxWaitMinutes != 0 {
			t.Fatalf("board %s", r.Body)
		}
		noneTok := newDisplayToken(t, app, none.RunID)
		r = app.Do(http.MethodGet, "/display/"+noneTok.Token+"/board", nil, nil)
		r.Decode(&board)
		if board.Waiting.OverSLA != nil {
			t.Fatalf("board without a target: %s", r.Body)
		}

		// Served: the strict queue misses both targets (some time passes),
		// the easy one meets both.
		serve := func(runID string) {
			var v struct{ ID string }
			app.API(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", nil).Must(http.StatusCreated, &v)
			time.Sleep(20 * time.Millisecond)
			app.API(http.MethodPost, "/turns/"+v.ID+"/start", nil).Must(http.StatusCreated, nil)
			time.Sleep(20 * time.Millisecond)
			app.API(http.MethodPost, "/turns/"+v.ID+"/complete", nil).Must(http.StatusCreated, nil)
		}
		serve(strict.RunID)
		takeTicketTurn(t, app, easy.RunID, map[string]any{})
		serve(easy.RunID)
		takeTicketTurn(t, app, none.RunID, map[string]any{})
		serve(none.RunID)

		var sum struct {
			Queues []struct {
				QueueID string
				SLA     *slaShares
			}
			Total struct{ SLA *slaShares }
		}
		app.API(http.MethodGet, "/analytics/summary", nil).Must(http.StatusOK, &sum)
		zero, thirty := 0, 30
		for _, q := range sum.Queues {
			switch q.QueueID {
			case strict.ID:
				if q.SLA == nil {
					t.Fatal("strict: sla null")
				}
				wantShare(t, "strict wait", q.SLA.Wait, &zero, 1, 0)
				wantShare(t, "strict service", q.SLA.Service, &zero, 1, 0)
			case easy.ID:
				if q.SLA == nil {
					t.Fatal("easy: sla null")
				}
				wantShare(t, "easy wait", q.SLA.Wait, &thirty, 1, 1)
				wantShare(t, "easy service", q.SLA.Service, &thirty, 1, 1)
			case none.ID:
				if q.SLA != nil {
					t.Fatalf("a queue without targets: sla %+v", q.SLA)
				}
			}
		}
		if sum.Total.SLA == nil {
			t.Fatal("total: sla null")
		}
		wantShare(t, "total wait", sum.Total.SLA.Wait, nil, 2, 1)
		wantShare(t, "total service", sum.Total.SLA.Service, nil, 2, 1)

		var dash struct {
			Queues []struct {
				QueueID  string
				SLAToday *slaShares `json:"slaToday"`
			}
		}
		app.API(http.MethodGet, "/analytics/dashboard", nil).Must(http.StatusOK, &dash)
		for _, q := range dash.Queues {
			switch q.QueueID {
			case easy.ID:
				if q.SLAToday == nil {
					t.Fatal("dashboard easy: slaToday null")
				}
				wantShare(t, "dashboard easy wait", q.SLAToday.Wait, &thirty, 1, 1)
				wantShare(t, "dashboard easy service", q.SLAToday.Service, &thirty, 1, 1)
			case strict.ID:
				if q.SLAToday == nil {
					t.Fatal("dashboard strict: slaToday null")
				}
				wantShare(t, "dashboard strict service", q.SLAToday.Service, &zero, 1, 0)
			case none.ID:
				if q.SLAToday != nil {
					t.Fatalf("dashboard without targets: %+v", q.SLAToday)
				}
			}
		}
		if evs := waitEvents(t, app, none.RunID, noneCursor, "turn.sla_breached", 1, 0); len(evs) != 0 {
			t.Fatalf("a queue without targets raised %d", len(evs))
		}
	})
}

// TestDispatchersShareTheWait: a queue without stations divides the wait
// estimate by its dispatchers (0 counts as 1), on the turn view and the
// ticket page; a queue with stations divides by its stations whatever
// dispatchers says.
func TestDispatchersShareTheWait(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		var e client.Entity
		app.API(http.MethodPost, "/entities", map[string]any{"name": "Branch"}).Must(http.StatusCreated, &e)
		mk := func(dispatchers int, stations int) string {
			body := map[string]any{"entityId": e.ID, "name": "Line", "type": "TURN", "dispatchers": dispatchers}
			var st []any
			for i := range stations {
				st = append(st, map[string]any{"label": "Desk " + string(rune('A'+i))})
			}
			if st != nil {
				body["stations"] = st
			}
			var q client.QueueView
			app.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
			return q.Runs[0].ID
		}
		for _, c := range []struct {
			dispatchers, stations, servers int
		}{{1, 0, 1}, {3, 0, 3}, {0, 0, 1}, {5, 2, 2}} {
			run := mk(c.dispatchers, c.stations)
			var third string
			for range 3 {
				third, _ = takeTicketTurn(t, app, run, map[string]any{})
			}
			var v struct {
				WaitEstimate struct{ Seconds, Minutes, Servers, AverageServiceSeconds int }
			}
			app.API(http.MethodGet, "/turns/"+third, nil).Must(http.StatusOK, &v)
			w := v.WaitEstimate
			if w.Servers != c.servers || w.Seconds != 3*w.AverageServiceSeconds/c.servers {
				t.Fatalf("dispatchers %d, stations %d: estimate %+v, want %d servers", c.dispatchers, c.stations, w, c.servers)
			}
			_, tk := readTicket(t, app, newTicketLink(t, app, third, nil).Token)
			if tk.WaitMinutes == nil || *tk.WaitMinutes != w.Minutes {
				t.Fatalf("dispatchers %d: the ticket says %v minutes, the turn %d", c.dispatchers, tk.WaitMinutes, w.Minutes)
			}
		}
	})
}

// TestArrivalBoardSecurityCode: with arrivalBoard.showSecurity the ticket
// page and the board show the same four-digit code for a turn (the board
// beside the called turn); without it neither shows one.
func TestArrivalBoardSecurityCode(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		for _, show := range []bool{true, false} {
			q := newLiveQueue(t, app, "Pickup", map[string]any{"arrivalBoard": map[string]any{
				"columns": []any{map[string]any{"key": "plate", "label": "Plate"}}, "showSecurity": show}})
			id, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
			_, tk := readTicket(t, app, newTicketLink(t, app, id, nil).Token)
			app.API(http.MethodPost, "/turns/"+id+"/call", map[string]any{"stationId": q.StationID}).Must(http.StatusCreated, nil)
			var b struct {
				ShowSecurity bool
				Calling      []struct {
					TurnID       string
					SecurityCode *string
				}
			}
			app.Do(http.MethodGet, "/display/"+newDisplayToken(t, app, q.RunID).Token+"/board", nil, nil).Must(http.StatusOK, &b)
			if len(b.Calling) != 1 || b.Calling[0].TurnID != id || b.ShowSecurity != show {
				t.Fatalf("showSecurity %v: board %+v", show, b)
			}
			if !show {
				if tk.SecurityCode != nil || b.Calling[0].SecurityCode != nil {
					t.Fatalf("showSecurity off: ticket %v, board %v", tk.SecurityCode, b.Calling[0].SecurityCode)
				}
				continue
			}
			if tk.SecurityCode == nil || len(*tk.SecurityCode) != 4 || strings.Trim(*tk.SecurityCode, "0123456789") != "" ||
				b.Calling[0].SecurityCode == nil || *b.Calling[0].SecurityCode != *tk.SecurityCode {
				t.Fatalf("showSecurity on: ticket %v, board %v", tk.SecurityCode, b.Calling[0].SecurityCode)
			}
		}
	})
}

// TestOffersPoints: with offers.enabled each served turn earns one point
// to its phone in that queue, at most offers.maxPoints (earned keeps
// counting); a turn not served earns none; another queue's turns count
// there; off, the reads are 409 OFFERS_DISABLED; a missing or bad phone is
// 400 on phone.
func TestOffersPoints(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
		q := newLiveQueue(t, app, "Coffee", map[string]any{"offers": map[string]any{"enabled": true, "maxPoints": 2}})
		other := newLiveQueue(t, app, "Tea", map[string]any{"offers": map[string]any{"enabled": true}})
		off := newLiveQueue(t, app, "Plain", nil)
		const phone = "+5511999990000"
		serve := func(runID string) string {
			id, _ := takeTicketTurn(t, app, runID, map[string]any{"phone": phone})
			var v struct{ ID string }
			app.API(http.MethodPost, "/queue-runs/"+runID+"/dispatch/next", nil).Must(http.StatusCreated, &v)
			app.API(http.MethodPost, "/turns/"+v.ID+"/start", nil).Must(http.StatusCreated, nil)
			app.API(http.MethodPost, "/turns/"+v.ID+"/complete", nil).Must(http.StatusCreated, nil)
			return id
		}
		type points struct {
			QueueID, Phone            string
			Earned, Points, MaxPoints int
			Full                      bool
		}
		read := func(queueID string) points {
			var p points
			app.API(http.MethodGet, "/queues/"+queueID+"/points?phone=%2B5511999990000", nil).Must(http.StatusOK, &p)
			return p
		}
		if p := read(q.ID); p.Earned != 0 || p.Points != 0 || p.MaxPoints != 2 || p.Full || p.Phone != phone {
			t.Fatalf("before any visit: %+v", p)
		}
		first := serve(q.RunID)
		if p := read(q.ID); p.Earned != 1 || p.Points != 1 || p.Full {
			t.Fatalf("one visit: %+v", p)
		}
		waiting, _ := takeTicketTurn(t, app, q.RunID, map[string]any{"phone": phone}) // not served
		serve(q.RunID)
		serve(q.RunID)
		if p := read(q.ID); p.Earned != 3 || p.Points != 2 || !p.Full {
			t.Fatalf("three visits, a card of 2: %+v", p)
		}
		var tp struct {
			TurnID string
			Earned int
			Phone  *points
		}
		app.API(http.MethodGet, "/turns/"+first+"/points", nil).Must(http.StatusOK, &tp)
		if tp.TurnID != first || tp.Earned != 1 || tp.Phone == nil || tp.Phone.Points != 2 {
			t.Fatalf("a served turn's points %+v", tp)
		}
		// One turn is left waiting (next serves in order, so the last
		// taken): it earned nothing.
		var page struct{ Data []struct{ ID string } }
		app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?status=WAITING", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 {
			t.Fatalf("unserved turns %+v (taken unserved: %s)", page.Data, waiting)
		}
		app.API(http.MethodGet, "/turns/"+page.Data[0].ID+"/points", nil).Must(http.StatusOK, &tp)
		if tp.Earned != 0 {
			t.Fatalf("an unserved turn earned %d", tp.Earned)
		}
		if p := read(other.ID); p.Earned != 0 || p.MaxPoints != 100 {
			t.Fatalf("another queue, default maxPoints: %+v", p)
		}
		serve(other.RunID)
		if p := read(other.ID); p.Earned != 1 {
			t.Fatalf("another queue after a visit: %+v", p)
		}

		if r := app.API(http.MethodGet, "/queues/"+off.ID+"/points?phone=%2B5511999990000", nil); r.Status != http.StatusConflict || r.ErrorCode() != "OFFERS_DISABLED" {
			t.Fatalf("offers off: %d %s", r.Status, r.Body)
		}
		offTurn, _ := takeTicketTurn(t, app, off.RunID, map[string]any{})
		if r := app.API(http.MethodGet, "/turns/"+offTurn+"/points", nil); r.Status != http.StatusConflict || r.ErrorCode() != "OFFERS_DISABLED" {
			t.Fatalf("offers off, a turn: %d %s", r.Status, r.Body)
		}
		for _, bad := range []string{"", "?phone=123"} {
			if r := app.API(http.MethodGet, "/queues/"+q.ID+"/points"+bad, nil); r.Status != http.StatusBadRequest || r.ErrorCode() != "VALIDATION_ERROR" {
				t.Fatalf("phone %q: %d %s", bad, r.Status, r.Body)
			}
		}
		_, otherKey := app.NewAccount("premium", "all")
		if r := app.APIWith(otherKey, http.MethodGet, "/queues/"+q.ID+"/points?phone=%2B5511999990000", nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account: %d %s", r.Status, r.Body)
		}
	})
}

// TestRaceHelpPressedAtOnce: 30 presses of "I need help" at once on
// PostgreSQL (a phone tapping, a page retried) make one open request and
// one turn.help_requested; every press answers 200; and two staff
// answering at once with different replies leave one answer and one
// turn.help_answered (the other is 409 HELP_ALREADY_ANSWERED).
func TestRaceHelpPressedAtOnce(t *testing.T) {
	app := apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	q := newLiveQueue(t, app, "Help desk", map[string]any{
		"help": map[string]any{"enabled": true, "quickReplies": []string{"On my way", "Please come to the counter"}}})
	_, cursor := eventsSince(t, app, q.RunID, "")
	turnID, _ := takeTicketTurn(t, app, q.RunID, map[string]any{})
	link := newTicketLink(t, app, turnID, nil)
	const presses = 30
	var wg sync.WaitGroup
	statuses := make([]int, presses)
	for i := range presses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = app.Do(http.MethodPost, "/ticket/"+link.Token+"/help", nil, nil).Status
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("press %d: %d", i, s)
		}
	}
	var all struct{ Data []helpRequest }
	app.API(http.MethodGet, "/turns/"+turnID+"/help-requests", nil).Must(http.StatusOK, &all)
	if len(all.Data) != 1 || all.Data[0].Status != "OPEN" {
		t.Fatalf("requests after %d presses: %+v", presses, all.Data)
	}
	replies := []string{"On my way", "Please come to the counter"}
	codes := make([]int, len(replies))
	for i, reply := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = app.API(http.MethodPost, "/help-requests/"+all.Data[0].ID+"/answer", map[string]any{"reply": reply}).Status
		}()
	}
	wg.Wait()
	if !(codes[0] == http.StatusCreated && codes[1] == http.StatusConflict || codes[0] == http.StatusConflict && codes[1] == http.StatusCreated) {
		t.Fatalf("two answers at once: %v", codes)
	}
	if got := waitEvents(t, app, q.RunID, cursor, "turn.help_requested", 2, 0); len(got) != 1 {
		t.Fatalf("turn.help_requested raised %d times", len(got))
	}
	if got := waitEvents(t, app, q.RunID, cursor, "turn.help_answered", 2, 0); len(got) != 1 {
		t.Fatalf("turn.help_answered raised %d times", len(got))
	}
}

// TestRaceTransfers on PostgreSQL: 20 transfers of one turn at once move it
// once (one 201, the rest 409 INVALID_TRANSITION: it was cancelled by the
// first); and turns crossing between two queues in both directions at once
// all arrive (a deadlock between the two runs' locks is retried, never an
// error), each destination holding exactly what was sent to it.
func TestRaceTransfers(t *testing.T) {
	app := apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) { c.RateLimit.PerMinute = 100000 }))
	a := newLiveQueue(t, app, "Alpha", map[string]any{"transferEnabled": true, "turnPrefix": "A"})
	b := newLiveQueue(t, app, "Beta", map[string]any{"transferEnabled": true, "turnPrefix": "B"})

	one, _ := takeTicketTurn(t, app, a.RunID, map[string]any{})
	const callers = 20
	var wg sync.WaitGroup
	statuses := make([]int, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = app.API(http.MethodPost, "/turns/"+one+"/transfer", map[string]any{"queueId": b.ID}).Status
		}()
	}
	wg.Wait()
	moved := 0
	for i, s := range statuses {
		switch s {
		case http.StatusCreated:
			moved++
		case http.StatusConflict:
		default:
			t.Fatalf("caller %d: %d", i, s)
		}
	}
	if moved != 1 {
		t.Fatalf("one turn transferred %d times", moved)
	}

	const each = 10
	var fromA, fromB []string
	for range each {
		id, _ := takeTicketTurn(t, app, a.RunID, map[string]any{})
		fromA = append(fromA, id)
		id, _ = takeTicketTurn(t, app, b.RunID, map[string]any{})
		fromB = append(fromB, id)
	}
	codes := make([]int, 2*each)
	for i := range each {
		wg.Add(2)
		go func() {
			defer wg.Done()
			codes[i] = app.API(http.MethodPost, "/turns/"+fromA[i]+"/transfer", map[string]any{"queueId": b.ID}).Status
		}()
		go func() {
			defer wg.Done()
			codes[each+i] = app.API(http.MethodPost, "/turns/"+fromB[i]+"/transfer", map[string]any{"queueId": a.ID}).Status
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusCreated {
			t.Fatalf("crossing transfer %d: %d", i, c)
		}
	}
	count := func(runID string) int {
		var page struct{ Data []struct{ ID string } }
		app.API(http.MethodGet, "/queue-runs/"+runID+"/turns?status=WAITING&limit=200", nil).Must(http.StatusOK, &page)
		return len(page.Data)
	}
	if na, nb := count(a.RunID), count(b.RunID); na != each || nb != each+1 {
		t.Fatalf("waiting after the crossing: A %d (want %d), B %d (want %d)", na, each, nb, each+1)
	}
}
