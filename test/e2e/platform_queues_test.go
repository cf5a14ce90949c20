package e2e

// Queues end to end: every nested object, filters, settings, stations and
// runs (open, close, intake).

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/test/apptest"
)

// ---- queues ----

func pfFullQueueBody(entityID string) map[string]any {
	return map[string]any{
		"entityId": entityID, "name": "Caja principal", "type": "HYBRID",
		"subtitle": "Planta baja", "processName": "Atención al cliente", "locationId": "loc-1",
		"location": map[string]any{"lat": 40.4168, "lng": -3.7038, "shortAddress": "Sol 1", "accuracyMeters": 5.5,
			"name": "Sol", "fullAddress": "Puerta del Sol 1, Madrid", "timezone": "Europe/Madrid"},
		"schedule": map[string]any{"mode": "weekly", "weekly": []any{
			map[string]any{"day": 1, "open": "09:00", "close": "14:00"},
			map[string]any{"day": 1, "open": "16:00", "close": "20:00"},
		}, "opensBeforeMinutes": 15, "closesBeforeMinutes": 10, "allowOutsideHours": false, "resetNumberingDaily": true},
		"capacity":     map[string]any{"maxTurns": 50},
		"geofence":     map[string]any{"radiusMeters": 300},
		"tolerance":    map[string]any{"graceMinutes": 5},
		"dispatchFlow": map[string]any{"onToleranceExpired": "hold"},
		"preAttention": map[string]any{"instructions": "Traiga su DNI", "questions": []any{
			map[string]any{"id": "motivo", "label": "Motivo", "type": "choice", "required": true,
				"options": []any{"Consulta", map[string]any{"label": "Urgente", "prefix": "U", "priority": "HIGH"}}},
			map[string]any{"id": "nota", "label": "Nota"},
		}},
		"stations":           []any{map[string]any{"label": "Caja 1", "description": "Entrada"}, map[string]any{"label": "Caja 2"}},
		"help":               map[string]any{"enabled": true, "quickReplies": []any{"¿Dónde está la caja?"}},
		"transferEnabled":    true,
		"whatsappCapture":    false,
		"accessCodeRequired": true,
		"cancellation":       map[string]any{"minNoticeMinutes": 30},
		"carpool":            map[string]any{"enabled": true, "intakeWindowMinutes": 20, "oneActiveTurnPerCode": true, "autoArriveOnGeofence": false},
		"arrivalBoard":       map[string]any{"columns": []any{map[string]any{"key": "plate", "label": "Matrícula"}}, "showSecurity": true},
		"offers":             map[string]any{"enabled": true},
		"sla":                map[string]any{"maxWaitMinutes": 20, "maxServiceMinutes": nil},
		"dispatchers":        3,
		"turnPrefix":         "A",
		"turnPadding":        3,
	}
}

func TestQueueCreateWithEveryNestedObject(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		ent := pfEntity(t, a, "Centro")
		body := pfFullQueueBody(ent)
		var q map[string]any
		a.API(http.MethodPost, "/queues", body).Must(http.StatusCreated, &q)
		pfSubset(t, "queue", q, pfJSON(body))
		// The defaults of spec 2.1 fill what the body left out.
		pfSubset(t, "queue", q, pfJSON(map[string]any{
			"capacity":     map[string]any{"maxTurns": 50, "waitlistEnabled": false, "autoPromote": true},
			"geofence":     map[string]any{"radiusMeters": 300, "requireToTake": false},
			"tolerance":    map[string]any{"graceMinutes": 5, "allowReentry": true, "maxReentries": 1},
			"dispatchFlow": map[string]any{"callOnNext": true, "trackService": true, "onToleranceExpired": "hold", "allowReopen": false},
			"offers":       map[string]any{"enabled": true, "maxPoints": 100},
		}))
		nota := q["preAttention"].(map[string]any)["questions"].([]any)[1]
		pfSubset(t, "questions[1]", nota, pfJSON(map[string]any{"type": "text", "required": false, "options": []any{}}))
		stations, runs := q["stations"].([]any), q["runs"].([]any)
		if len(stations) != 2 || len(runs) != 1 {
			t.Fatalf("stations %v, runs %v", stations, runs)
		}
		for _, s := range stations {
			if id, _ := s.(map[string]any)["id"].(string); !strings.HasPrefix(id, "sta_") {
				t.Errorf("station %v", s)
			}
		}
		pfSubset(t, "runs[0]", runs[0], map[string]any{"status": "OPEN", "intakeOpen": true, "closedAt": nil, "queueId": q["id"]})

		// Stored as created.
		var got map[string]any
		a.API(http.MethodGet, "/queues/"+q["id"].(string), nil).Must(http.StatusOK, &got)
		pfSubset(t, "stored", got, pfDropTimes(q))

		// The smallest body gets every default.
		var min map[string]any
		a.API(http.MethodPost, "/queues", map[string]any{"entityId": ent, "name": "Mínima", "type": "TURN"}).Must(http.StatusCreated, &min)
		pfSubset(t, "minimal", min, pfJSON(map[string]any{
			"subtitle": nil, "processName": nil, "locationId": nil, "location": nil, "geofence": nil,
			"cancellation": nil, "arrivalBoard": nil,
			"schedule":        map[string]any{"mode": "always", "weekly": []any{}},
			"capacity":        map[string]any{"maxTurns": nil, "waitlistEnabled": false, "autoPromote": true},
			"dispatchFlow":    map[string]any{"callOnNext": true, "trackService": true, "onToleranceExpired": "no_show", "allowReopen": false},
			"preAttention":    map[string]any{"instructions": nil, "questions": []any{}},
			"help":            map[string]any{"enabled": false, "quickReplies": []any{}},
			"carpool":         map[string]any{"enabled": false},
			"offers":          map[string]any{"enabled": false, "maxPoints": 100},
			"sla":             map[string]any{"maxWaitMinutes": nil, "maxServiceMinutes": nil},
			"transferEnabled": false, "whatsappCapture": true, "accessCodeRequired": false,
			"dispatchers": 1, "turnPrefix": "", "turnPadding": 0, "stations": []any{},
		}))

		// entityId must name an entity of the account.
		pfErr(t, a.API(http.MethodPost, "/queues", map[string]any{"entityId": "ent_00000000000000000000000000", "name": "Huérfana", "type": "TURN"}),
			422, "ENTITY_NOT_FOUND")
	})
}

func TestQueueListFiltersByEntity(t *testing.T) {
	a := pfMemory(t)
	e1, e2 := pfEntity(t, a, "Norte"), pfEntity(t, a, "Sur")
	var want1 []string
	for range 3 {
		want1 = append(want1, pfQueueIn(t, a, e1, nil).ID)
	}
	q2 := pfQueueIn(t, a, e2, nil)
	var page client.QueuePage
	a.API(http.MethodGet, "/queues?entityId="+e1, nil).Must(http.StatusOK, &page)
	var got []string
	for _, q := range page.Data {
		got = append(got, q.ID)
	}
	if !slices.Equal(got, want1) {
		t.Errorf("entity %s: %v, want %v", e1, got, want1)
	}
	a.API(http.MethodGet, "/queues?entityId="+e2, nil).Must(http.StatusOK, &page)
	if len(page.Data) != 1 || page.Data[0].ID != q2.ID {
		t.Errorf("entity %s: %+v", e2, page.Data)
	}
	a.API(http.MethodGet, "/queues", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 4 {
		t.Errorf("unfiltered: %d", len(page.Data))
	}
}

func TestQueueSettings(t *testing.T) {
	a := pfMemory(t)
	q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
	put := func(setting string, body any) *apptest.Response {
		return a.API(http.MethodPut, "/queues/"+q.ID+"/"+setting, body)
	}
	var v map[string]any
	member := func(path ...string) any {
		var cur any = v
		for _, p := range path {
			cur = cur.(map[string]any)[p]
		}
		return cur
	}

	t.Run("sla", func(t *testing.T) {
		put("sla", map[string]any{"maxWaitMinutes": 30, "maxServiceMinutes": 100000}).Must(http.StatusOK, &v)
		if member("sla", "maxWaitMinutes") != 30.0 || member("sla", "maxServiceMinutes") != 100000.0 {
			t.Errorf("sla %v", v["sla"])
		}
		put("sla", map[string]any{"maxWaitMinutes": 10}).Must(http.StatusOK, &v) // a PUT replaces both
		if member("sla", "maxWaitMinutes") != 10.0 || member("sla", "maxServiceMinutes") != nil {
			t.Errorf("sla %v", v["sla"])
		}
		put("sla", `{"maxWaitMinutes":null,"maxServiceMinutes":null}`).Must(http.StatusOK, &v)
		if member("sla", "maxWaitMinutes") != nil {
			t.Errorf("sla %v", v["sla"])
		}
		pfWantFields(t, put("sla", map[string]any{"maxWaitMinutes": 100001, "maxServiceMinutes": -1}), "maxWaitMinutes max", "maxServiceMinutes min")
		pfWantFields(t, put("sla", map[string]any{"maxWait": 1}), "maxWait unknown_field")
	})
	t.Run("dispatch-flow", func(t *testing.T) {
		put("dispatch-flow", map[string]any{"allowReopen": true}).Must(http.StatusOK, &v)
		pfSubset(t, "dispatchFlow", v["dispatchFlow"], map[string]any{"allowReopen": true, "callOnNext": true, "trackService": true, "onToleranceExpired": "no_show"})
		put("dispatch-flow", map[string]any{"callOnNext": false, "onToleranceExpired": "cancel"}).Must(http.StatusOK, &v)
		pfSubset(t, "dispatchFlow", v["dispatchFlow"], map[string]any{"allowReopen": true, "callOnNext": false, "trackService": true, "onToleranceExpired": "cancel"})
		put("dispatch-flow", nil).Must(http.StatusOK, &v) // all optional
		pfWantFields(t, put("dispatch-flow", map[string]any{"onToleranceExpired": "explode"}), "onToleranceExpired oneof")
	})
	t.Run("whatsapp-capture", func(t *testing.T) {
		put("whatsapp-capture", map[string]any{"whatsappCapture": false}).Must(http.StatusOK, &v)
		if v["whatsappCapture"] != false {
			t.Errorf("whatsappCapture %v", v["whatsappCapture"])
		}
		pfWantFields(t, put("whatsapp-capture", map[string]any{}), "whatsappCapture required")
	})
	t.Run("numbering-reset", func(t *testing.T) {
		put("numbering-reset", map[string]any{"resetNumberingDaily": true}).Must(http.StatusOK, &v)
		if member("schedule", "resetNumberingDaily") != true {
			t.Errorf("schedule %v", v["schedule"])
		}
		pfWantFields(t, put("numbering-reset", map[string]any{}), "resetNumberingDaily required")
	})
	t.Run("cancellation-policy", func(t *testing.T) {
		put("cancellation-policy", map[string]any{"minNoticeMinutes": 60}).Must(http.StatusOK, &v)
		if member("cancellation", "minNoticeMinutes") != 60.0 {
			t.Errorf("cancellation %v", v["cancellation"])
		}
		put("cancellation-policy", `{"minNoticeMinutes":null}`).Must(http.StatusOK, &v)
		if v["cancellation"] != nil {
			t.Errorf("cancellation %v", v["cancellation"])
		}
		pfWantFields(t, put("cancellation-policy", map[string]any{}), "minNoticeMinutes required")
		pfWantFields(t, put("cancellation-policy", map[string]any{"minNoticeMinutes": 100001}), "minNoticeMinutes max")
	})
	t.Run("unknown queue", func(t *testing.T) {
		pfErr(t, a.API(http.MethodPut, "/queues/que_00000000000000000000000000/sla", map[string]any{}), 404, "NOT_FOUND")
	})
	// Every change is kept.
	a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &v)
	pfSubset(t, "stored", v, map[string]any{"whatsappCapture": false, "cancellation": nil,
		"dispatchFlow": map[string]any{"allowReopen": true, "callOnNext": false, "onToleranceExpired": "cancel"}})
}

func TestStations(t *testing.T) {
	a := pfMemory(t)
	ent := pfEntity(t, a, "Centro")
	var in []any
	for i := range 29 {
		in = append(in, map[string]any{"label": fmt.Sprintf("Caja %d", i+1)})
	}
	q := pfQueueIn(t, a, ent, map[string]any{"stations": in})
	var s struct{ ID, QueueID, Label string }
	a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 30", "description": "La última"}).Must(http.StatusCreated, &s)
	if s.QueueID != q.ID || s.Label != "Caja 30" {
		t.Errorf("station %+v", s)
	}
	env := pfErr(t, a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 31"}), 409, "TOO_MANY_STATIONS")
	if env.Error.Details["max"] != 30.0 {
		t.Errorf("details %v", env.Error.Details)
	}
	var page client.StationPage
	a.API(http.MethodGet, "/queues/"+q.ID+"/stations", nil).Must(http.StatusOK, &page)
	if len(page.Data) != 30 || page.Pagination.NextCursor != nil || page.Data[0].Label != "Caja 1" || page.Data[29].Label != "Caja 30" {
		t.Errorf("%d stations, first %+v", len(page.Data), page.Data[0])
	}
	var del struct{ ID string }
	a.API(http.MethodDelete, "/stations/"+page.Data[0].ID, nil).Must(http.StatusOK, &del)
	if del.ID != page.Data[0].ID {
		t.Errorf("deleted %+v", del)
	}
	a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": "Caja 31"}).Must(http.StatusCreated, nil)
	pfErr(t, a.API(http.MethodDelete, "/stations/"+page.Data[0].ID, nil), 404, "NOT_FOUND")
	pfErr(t, a.API(http.MethodPost, "/queues/que_00000000000000000000000000/stations", map[string]any{"label": "X"}), 404, "NOT_FOUND")
	pfWantFields(t, a.API(http.MethodPost, "/queues/"+q.ID+"/stations", map[string]any{"label": ""}), "label min_length")
}

func TestRunsOpenCloseAndIntake(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		a := start(t, pfUnlimited)
		q := pfQueueIn(t, a, pfEntity(t, a, "Centro"), nil)
		id := q.Runs[0].ID
		op := func(name string) client.Run {
			t.Helper()
			var r client.Run
			a.API(http.MethodPost, "/queue-runs/"+id+"/"+name, nil).Must(http.StatusCreated, &r)
			if r.ID != id || r.QueueID != q.ID {
				t.Fatalf("%s answered %+v", name, r)
			}
			return r
		}
		want := func(r client.Run, status string, intake bool) {
			t.Helper()
			if r.Status != status || r.IntakeOpen != intake {
				t.Fatalf("run %s intake %v, want %s intake %v", r.Status, r.IntakeOpen, status, intake)
			}
		}

		want(q.Runs[0], "OPEN", true)
		// Intake closes while the run stays open; repeating changes nothing.
		r := op("close-intake")
		want(r, "OPEN", false)
		again := op("close-intake")
		want(again, "OPEN", false)
		if !pfSameTime(again.UpdatedAt, r.UpdatedAt) {
			t.Error("a repeated close-intake changed the run")
		}
		want(op("open-intake"), "OPEN", true)
		want(op("open-intake"), "OPEN", true)

		// Closing closes the intake too; repeating changes nothing.
		closed := op("close")
		want(closed, "CLOSED", false)
		if closed.ClosedAt == nil {
			t.Error("closedAt not set")
		}
		if again := op("close"); !pfSameTime(again.UpdatedAt, closed.UpdatedAt) || again.Status != "CLOSED" {
			t.Errorf("a repeated close changed the run: %+v", again)
		}
		// A closed run has no intake to open or close.
		pfErr(t, a.API(http.MethodPost, "/queue-runs/"+id+"/open-intake", nil), 409, "RUN_CLOSED")
		pfErr(t, a.API(http.MethodPost, "/queue-runs/"+id+"/close-intake", nil), 409, "RUN_CLOSED")

		// Opening reopens the intake.
		opened := op("open")
		want(opened, "OPEN", true)
		if opened.ClosedAt != nil || opened.OpenedAt == nil {
			t.Errorf("reopened %+v", opened)
		}
		want(op("open"), "OPEN", true)

		var view client.QueueView
		a.API(http.MethodGet, "/queues/"+q.ID, nil).Must(http.StatusOK, &view)
		if len(view.Runs) != 1 || view.Runs[0].ID != id || view.Runs[0].Status != "OPEN" || !view.Runs[0].IntakeOpen {
			t.Errorf("queue runs %+v", view.Runs)
		}
		pfWantFields(t, a.API(http.MethodPost, "/queue-runs/"+id+"/open", map[string]any{"force": true}), "force unknown_field")
		pfErr(t, a.API(http.MethodPost, "/queue-runs/run_00000000000000000000000000/close", nil), 404, "NOT_FOUND")
	})
}
