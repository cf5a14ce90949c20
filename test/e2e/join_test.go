package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qms-dev/qms/client"
	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/test/apptest"
)

// Madrid's Puerta del Sol: where the join tests' branch stands.
const solLat, solLng = 40.416775, -3.703790

// joinQueue makes a queue the join page has everything to show: a choice
// whose option carries a priority and a prefix, a required text question,
// instructions; extra overrides or adds settings.
func joinQueue(t *testing.T, app *apptest.App, name string, extra map[string]any) liveQueue {
	t.Helper()
	body := map[string]any{
		"preAttention": map[string]any{
			"instructions": "Have your prescription ready.",
			"questions": []any{
				map[string]any{"id": "reason", "label": "What brings you?", "type": "choice", "required": true,
					"options": []any{"Pick up", map[string]any{"label": "Urgent", "prefix": "U", "priority": "HIGH"}}},
				map[string]any{"id": "name", "label": "Your name", "required": true},
				map[string]any{"id": "note", "label": "Anything else?"},
			},
		},
		"location": map[string]any{"lat": solLat, "lng": solLng, "shortAddress": "Puerta del Sol", "timezone": "Europe/Madrid"},
	}
	for k, v := range extra {
		body[k] = v
	}
	return newLiveQueue(t, app, name, body)
}

func newJoinLink(t *testing.T, app *apptest.App, queueID string, body any) client.JoinLinkCreated {
	t.Helper()
	var l client.JoinLinkCreated
	app.API(http.MethodPost, "/queues/"+queueID+"/join-links", body).Must(http.StatusCreated, &l)
	return l
}

// joinAs posts a join with the given cookie (the device's) and returns the
// response and the cookie the server set, if any.
func joinAs(t *testing.T, app *apptest.App, token, cookie string, body map[string]any) (*apptest.Response, string) {
	t.Helper()
	h := map[string]string{}
	if cookie != "" {
		h["Cookie"] = cookie
	}
	r := app.Do(http.MethodPost, "/join/"+token, body, h)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "qms_join" {
			return r, c.Name + "=" + c.Value
		}
	}
	return r, cookie
}

func answers(reason string) map[string]any {
	return map[string]any{"reason": reason, "name": "Ana"}
}

// TestJoinLinks takes turns through a join link on each storage, through
// its public routes: the API makes, lists and revokes links (another
// account's queue is 403); the page's state shows the queue; a join goes
// through the API's intake (answers checked, an option's priority and
// prefix applied, the access code, the phone normalised to E.164), lands
// a ticket link, and a repeat of its idempotency key is the same turn; one
// device holds at most 3 open turns of a queue; a revoked link stops at
// once.
func TestJoinLinks(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) {
			c.RateLimit.PerMinute = 100000
			c.Join.PerAddressPerMinute = 100000
		}))
		q := joinQueue(t, app, "Pharmacy", map[string]any{"whatsappCapture": true})
		l := newJoinLink(t, app, q.ID, map[string]any{"label": "Door", "language": "es", "phoneRegion": "es"})
		if !strings.HasPrefix(l.Token, "qmsj_") || l.URL != app.BaseURL+"/join/"+l.Token || l.QrURL != l.URL+"/qr.svg" ||
			l.PosterURL != l.URL+"/poster" || l.QueueID != q.ID || l.Kiosk || l.PhoneRegion == nil || *l.PhoneRegion != "ES" ||
			l.Language == nil || *l.Language != "es" || l.RevokedAt != nil {
			t.Fatalf("link %+v", l)
		}
		var page client.JoinLinkPage
		app.API(http.MethodGet, "/queues/"+q.ID+"/join-links", nil).Must(http.StatusOK, &page)
		if len(page.Data) != 1 || page.Data[0].ID != l.ID {
			t.Fatalf("list %+v", page)
		}
		if strings.Contains(string(app.API(http.MethodGet, "/queues/"+q.ID+"/join-links", nil).Body), l.Token) {
			t.Fatal("the list shows the token again")
		}
		// Another account's queue, and its links.
		_, other := app.NewAccount("premium", "queues:write")
		if r := app.APIWith(other, http.MethodPost, "/queues/"+q.ID+"/join-links", nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account's queue: %d %s", r.Status, r.Body)
		}
		if r := app.APIWith(other, http.MethodDelete, "/join-links/"+l.ID, nil); r.Status != http.StatusForbidden {
			t.Fatalf("another account's link: %d %s", r.Status, r.Body)
		}
		if r := app.API(http.MethodPost, "/queues/"+q.ID+"/join-links", map[string]any{"phoneRegion": "XX", "language": "de"}); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), `"phoneRegion"`) || !strings.Contains(string(r.Body), `"language"`) {
			t.Fatalf("bad options: %d %s", r.Status, r.Body)
		}

		// The page's state.
		var st client.JoinPage
		app.Do(http.MethodGet, "/join/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Queue.Name != "Pharmacy" || st.Branch.Name != "Branch Pharmacy" || !st.Open || st.Closed != nil ||
			len(st.Questions) != 3 || st.Questions[0].Type != "choice" || strings.Join(st.Questions[0].Options, ",") != "Pick up,Urgent" ||
			!st.Questions[1].Required || st.Questions[2].Required || !st.Phone || st.PhoneRegion != "ES" || st.Geofence != nil ||
			st.Instructions == nil || *st.Instructions != "Have your prescription ready." || st.Waiting.Count != 0 || st.Timezone != "Europe/Madrid" {
			t.Fatalf("state %+v", st)
		}
		if r := app.Do(http.MethodGet, "/join/"+l.Token, nil, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "/join/assets/join.js") {
			t.Fatalf("page %d", r.Status)
		}

		// Bad answers: every field named, nothing taken.
		r, _ := joinAs(t, app, l.Token, "", map[string]any{"formResponse": map[string]any{"reason": "Nope"}, "phone": "12", "peopleCount": 0})
		if r.Status != http.StatusBadRequest {
			t.Fatalf("bad join: %d %s", r.Status, r.Body)
		}
		for _, f := range []string{`"peopleCount"`} {
			if !strings.Contains(string(r.Body), f) {
				t.Fatalf("bad join does not name %s: %s", f, r.Body)
			}
		}
		r, _ = joinAs(t, app, l.Token, "", map[string]any{"formResponse": map[string]any{"reason": "Nope"}})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"formResponse.reason"`) || !strings.Contains(string(r.Body), `"formResponse.name"`) {
			t.Fatalf("bad answers: %d %s", r.Status, r.Body)
		}
		r, _ = joinAs(t, app, l.Token, "", map[string]any{"formResponse": answers("Pick up"), "phone": "600 12 34"})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"path":"phone"`) {
			t.Fatalf("a number Spain does not dial: %d %s", r.Status, r.Body)
		}

		// A join: the option's priority and prefix, the phone in E.164.
		body := map[string]any{"formResponse": answers("Urgent"), "phone": "600 12 34 56", "notifyWhatsapp": true,
			"peopleCount": 2, "idempotencyKey": "tap-0001"}
		r, cookie := joinAs(t, app, l.Token, "", body)
		var j client.Joined
		r.Must(http.StatusCreated, &j)
		if cookie == "" || !strings.HasPrefix(j.DisplayCode, "U") || j.Status != "WAITING" || j.Replayed || j.TicketURL != app.BaseURL+"/ticket/"+j.Ticket {
			t.Fatalf("joined %+v (cookie %q)", j, cookie)
		}
		var turn client.Turn
		app.API(http.MethodGet, "/turns/"+j.TurnID, nil).Must(http.StatusOK, &turn)
		if turn.Priority != "HIGH" || turn.Phone == nil || *turn.Phone != "+34600123456" || !turn.NotifyWhatsapp || turn.PeopleCount != 2 {
			t.Fatalf("turn %+v", turn)
		}
		if rr, tk := readTicket(t, app, j.Ticket); rr.Status != http.StatusOK || tk.DisplayCode != j.DisplayCode || tk.Language == nil || *tk.Language != "es" {
			t.Fatalf("ticket %d %+v", rr.Status, tk)
		}
		// The same tap again: the same turn.
		var again client.Joined
		r, _ = joinAs(t, app, l.Token, cookie, body)
		r.Must(http.StatusCreated, &again)
		if again.TurnID != j.TurnID || !again.Replayed {
			t.Fatalf("a repeat took another turn: %+v vs %+v", again, j)
		}
		body["peopleCount"] = 3
		if r, _ := joinAs(t, app, l.Token, cookie, body); r.Status != http.StatusConflict || r.ErrorCode() != "IDEMPOTENCY_KEY_REUSED" {
			t.Fatalf("a key reused with another body: %d %s", r.Status, r.Body)
		}

		// One device: at most 3 open turns of the queue.
		for i := 2; i <= 3; i++ {
			r, cookie = joinAs(t, app, l.Token, cookie, map[string]any{"formResponse": answers("Pick up")})
			r.Must(http.StatusCreated, nil)
		}
		r, _ = joinAs(t, app, l.Token, cookie, map[string]any{"formResponse": answers("Pick up")})
		if r.Status != http.StatusConflict || r.ErrorCode() != "TOO_MANY_OPEN_TURNS" {
			t.Fatalf("a fourth open turn from one device: %d %s", r.Status, r.Body)
		}
		// A forged cookie reads as none; a served turn frees a place.
		if r, _ := joinAs(t, app, l.Token, cookie+"x", map[string]any{"formResponse": answers("Pick up")}); r.Status != http.StatusCreated {
			t.Fatalf("a cookie that is not ours must read as none: %d %s", r.Status, r.Body)
		}
		app.API(http.MethodPost, "/turns/"+j.TurnID+"/cancel", nil).Must(http.StatusCreated, nil)
		r, _ = joinAs(t, app, l.Token, cookie, map[string]any{"formResponse": answers("Pick up")})
		r.Must(http.StatusCreated, nil)

		app.Do(http.MethodGet, "/join/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Waiting.Count != 4 || st.Waiting.WaitMinutes == nil {
			t.Fatalf("the line after the joins: %+v", st.Waiting)
		}

		// Whatever a page or a script sends: a clear 4xx naming the
		// problem, never a 500.
		for _, junk := range []struct {
			body any
			code string
		}{
			{`{"peopleCount":`, "VALIDATION_ERROR"},
			{`{"peopleCount":"two"}`, "VALIDATION_ERROR"},
			{`{"nope":1}`, "VALIDATION_ERROR"},
			{`[1,2]`, "VALIDATION_ERROR"},
			{`{"formResponse":{"name":"A\u0000B"}}`, "VALIDATION_ERROR"},
			{`{"location":{"lat":"north"}}`, "VALIDATION_ERROR"},
			{`{"location":{"lng":200}}`, "VALIDATION_ERROR"},
			{`{"idempotencyKey":"short"}`, "VALIDATION_ERROR"},
			{`{"accessCode":""}`, "VALIDATION_ERROR"},
			{`{"phone":"` + strings.Repeat("9", 100) + `"}`, "VALIDATION_ERROR"},
		} {
			r := app.Do(http.MethodPost, "/join/"+l.Token, junk.body, map[string]string{"Cookie": cookie})
			if r.Status != http.StatusBadRequest || r.ErrorCode() != junk.code {
				t.Errorf("POST %s: %d %s", junk.body, r.Status, r.Body)
			}
		}
		for _, path := range []string{"/join/nope", "/join/nope/state", "/join/nope/qr.svg", "/join/nope/poster", "/join/assets/nope.js", "/join/%00/state"} {
			if r := app.Do(http.MethodGet, path, nil, nil); r.Status != http.StatusNotFound && r.Status != http.StatusBadRequest {
				t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
			}
		}
		if r := app.Do(http.MethodPost, "/join/nope", map[string]any{}, nil); r.Status != http.StatusNotFound || r.ErrorCode() != "INVALID_JOIN_LINK" {
			t.Errorf("POST an unknown link: %d %s", r.Status, r.Body)
		}
		if r := app.Do(http.MethodPost, "/ticket/nope/arrive", map[string]any{}, nil); r.Status != http.StatusNotFound {
			t.Errorf("arrive on an unknown ticket: %d %s", r.Status, r.Body)
		}

		// QR code and poster.
		if r := app.Do(http.MethodGet, "/join/"+l.Token+"/qr.svg", nil, nil); r.Status != http.StatusOK || !strings.HasPrefix(string(r.Body), "<svg") {
			t.Fatalf("qr %d", r.Status)
		}
		if r := app.Do(http.MethodGet, "/join/"+l.Token+"/poster?paper=letter", nil, nil); r.Status != http.StatusOK ||
			!strings.Contains(string(r.Body), "Pide tu turno aquí") || !strings.Contains(string(r.Body), "poster-letter.css") ||
			!strings.Contains(string(r.Body), "<svg") || !strings.Contains(string(r.Body), "Pharmacy") {
			t.Fatalf("poster %d %s", r.Status, r.Body)
		}

		// Revoked: every route refuses at once.
		app.API(http.MethodDelete, "/join-links/"+l.ID, nil).Must(http.StatusOK, nil)
		for _, p := range []string{"", "/state", "/qr.svg", "/poster"} {
			if r := app.Do(http.MethodGet, "/join/"+l.Token+p, nil, nil); r.Status != http.StatusGone {
				t.Fatalf("GET %s after revoke: %d", p, r.Status)
			}
		}
		if r, _ := joinAs(t, app, l.Token, "", map[string]any{"formResponse": answers("Pick up")}); r.Status != http.StatusGone || r.ErrorCode() != "JOIN_LINK_REVOKED" {
			t.Fatalf("join after revoke: %d %s", r.Status, r.Body)
		}
		if r := app.Do(http.MethodGet, "/join/qmsj_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/state", nil, nil); r.Status != http.StatusNotFound || r.ErrorCode() != "INVALID_JOIN_LINK" {
			t.Fatalf("unknown link: %d %s", r.Status, r.Body)
		}
	})
}

// TestJoinRules checks, on each storage, the rules the API cannot see and
// the join page brings: the geofence (inside, outside with the distance,
// no location), the access code and capacity through the API's own
// intake, a closed queue, whatsappCapture off, and auto-arrival.
func TestJoinRules(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t, apptest.WithConfig(func(c *config.Config) {
			c.RateLimit.PerMinute = 100000
			c.Join.PerAddressPerMinute = 100000
		}))
		q := joinQueue(t, app, "Drive-in", map[string]any{
			"geofence":           map[string]any{"radiusMeters": 200, "requireToTake": true},
			"accessCodeRequired": true, "whatsappCapture": false,
			"capacity": map[string]any{"maxTurns": 1, "waitlistEnabled": true},
			"carpool":  map[string]any{"enabled": true, "autoArriveOnGeofence": true},
		})
		app.API(http.MethodPost, "/access-codes", map[string]any{"code": "CAR-1"}).Must(http.StatusCreated, nil)
		l := newJoinLink(t, app, q.ID, map[string]any{"kiosk": true})
		var st client.JoinPage
		app.Do(http.MethodGet, "/join/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Geofence == nil || st.Geofence.RadiusMeters != 200 || !st.AccessCodeRequired || st.Phone || !st.Waitlist || st.Full || !st.Kiosk {
			t.Fatalf("state %+v", st)
		}
		base := func(extra map[string]any) map[string]any {
			b := map[string]any{"formResponse": answers("Pick up"), "accessCode": "CAR-1"}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
		// No location; outside (about 1.1 km north); inside thanks to its accuracy.
		if r, _ := joinAs(t, app, l.Token, "", base(nil)); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "LOCATION_REQUIRED" {
			t.Fatalf("no location: %d %s", r.Status, r.Body)
		}
		far := map[string]any{"lat": solLat + 0.01, "lng": solLng, "accuracy": 20}
		r, _ := joinAs(t, app, l.Token, "", base(map[string]any{"location": far}))
		if r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "OUTSIDE_GEOFENCE" || !strings.Contains(string(r.Body), `"distanceMeters":1112`) {
			t.Fatalf("outside: %d %s", r.Status, r.Body)
		}
		near := map[string]any{"lat": solLat + 0.0025, "lng": solLng, "accuracy": 100} // 278 m, give or take 100
		if r, _ := joinAs(t, app, l.Token, "", base(map[string]any{"location": near, "phone": "+34600123456"})); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), `"path":"phone"`) {
			t.Fatalf("a phone with whatsappCapture off: %d %s", r.Status, r.Body)
		}
		if r, _ := joinAs(t, app, l.Token, "", map[string]any{"formResponse": answers("Pick up"), "location": near}); r.Status != http.StatusUnprocessableEntity ||
			r.ErrorCode() != "ACCESS_CODE_REQUIRED" {
			t.Fatalf("no access code: %d %s", r.Status, r.Body)
		}
		if r, _ := joinAs(t, app, l.Token, "", base(map[string]any{"location": near, "accessCode": "NOPE"})); r.Status != http.StatusUnprocessableEntity ||
			r.ErrorCode() != "ACCESS_CODE_UNKNOWN" {
			t.Fatalf("an unknown access code: %d %s", r.Status, r.Body)
		}
		var first, second client.Joined
		r, cookie := joinAs(t, app, l.Token, "", base(map[string]any{"location": near}))
		r.Must(http.StatusCreated, &first)
		if cookie != "" {
			t.Fatal("a kiosk link must keep nothing on the device")
		}
		joinAs(t, app, l.Token, "", base(map[string]any{"location": near}))
		r, _ = joinAs(t, app, l.Token, "", base(map[string]any{"location": near}))
		r.Must(http.StatusCreated, &second)
		if first.Status != "WAITING" || second.Status != "WAITLISTED" {
			t.Fatalf("capacity 1 with a waitlist: %s then %s", first.Status, second.Status)
		}
		app.Do(http.MethodGet, "/join/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if !st.Full || !st.Open {
			t.Fatalf("full with a waitlist: %+v", st)
		}

		// Auto-arrival: away, then inside; once.
		var a client.Arrival
		app.Do(http.MethodPost, "/ticket/"+first.Ticket+"/arrive", nil, nil).Must(http.StatusOK, &a)
		if !a.Enabled || a.Arrived || a.RadiusMeters == nil || *a.RadiusMeters != 200 || a.DistanceMeters != nil {
			t.Fatalf("arrival, no location: %+v", a)
		}
		app.Do(http.MethodPost, "/ticket/"+first.Ticket+"/arrive", map[string]any{"location": far}, nil).Must(http.StatusOK, &a)
		if a.Arrived || a.DistanceMeters == nil || *a.DistanceMeters != 1112 {
			t.Fatalf("arrival, far: %+v", a)
		}
		app.Do(http.MethodPost, "/ticket/"+first.Ticket+"/arrive", map[string]any{"location": map[string]any{"lat": solLat, "lng": solLng + 0.001}}, nil).Must(http.StatusOK, &a)
		if !a.Arrived {
			t.Fatalf("arrival, inside: %+v", a)
		}
		var turn client.Turn
		app.API(http.MethodGet, "/turns/"+first.TurnID, nil).Must(http.StatusOK, &turn)
		if turn.ArrivedAt == nil {
			t.Fatal("the turn is not arrived")
		}
		at := *turn.ArrivedAt
		app.Do(http.MethodPost, "/ticket/"+first.Ticket+"/arrive", map[string]any{"location": map[string]any{"lat": solLat, "lng": solLng}}, nil).Must(http.StatusOK, &a)
		app.API(http.MethodGet, "/turns/"+first.TurnID, nil).Must(http.StatusOK, &turn)
		if !a.Arrived || !turn.ArrivedAt.Equal(at) {
			t.Fatalf("a second report changed the arrival: %v then %v", at, turn.ArrivedAt)
		}
		if r := app.Do(http.MethodPost, "/ticket/"+first.Ticket+"/arrive", map[string]any{"location": map[string]any{"lat": 91, "lng": 0}}, nil); r.Status != http.StatusBadRequest {
			t.Fatalf("a latitude of 91: %d %s", r.Status, r.Body)
		}

		// Closed: the state says so; a join is refused by the intake.
		app.API(http.MethodPost, "/queue-runs/"+q.RunID+"/close", nil).Must(http.StatusCreated, nil)
		app.Do(http.MethodGet, "/join/"+l.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Open || st.Closed == nil || *st.Closed != "run_closed" {
			t.Fatalf("closed state %+v", st)
		}
		if r, _ := joinAs(t, app, l.Token, "", base(map[string]any{"location": near})); r.Status != http.StatusConflict || r.ErrorCode() != "QUEUE_CLOSED" {
			t.Fatalf("join a closed queue: %d %s", r.Status, r.Body)
		}

		// Intake closed; full without a waitlist.
		fq := newLiveQueue(t, app, "Small", map[string]any{"capacity": map[string]any{"maxTurns": 1}})
		fl := newJoinLink(t, app, fq.ID, map[string]any{"kiosk": true})
		app.Do(http.MethodPost, "/join/"+fl.Token, map[string]any{}, nil).Must(http.StatusCreated, nil)
		app.Do(http.MethodGet, "/join/"+fl.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Open || st.Closed == nil || *st.Closed != "full" || !st.Full || st.Waitlist {
			t.Fatalf("full without a waitlist: %+v", st)
		}
		if r := app.Do(http.MethodPost, "/join/"+fl.Token, map[string]any{}, nil); r.Status != http.StatusConflict || r.ErrorCode() != "CAPACITY_REACHED" {
			t.Fatalf("join a full queue: %d %s", r.Status, r.Body)
		}
		app.API(http.MethodPost, "/queue-runs/"+fq.RunID+"/close-intake", nil).Must(http.StatusCreated, nil)
		app.Do(http.MethodGet, "/join/"+fl.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Open || st.Closed == nil || *st.Closed != "intake_closed" {
			t.Fatalf("intake closed: %+v", st)
		}
		if r := app.Do(http.MethodPost, "/join/"+fl.Token, map[string]any{}, nil); r.Status != http.StatusConflict || r.ErrorCode() != "INTAKE_CLOSED" {
			t.Fatalf("join with intake closed: %d %s", r.Status, r.Body)
		}

		// Outside hours: closed, and when it opens.
		hq := newLiveQueue(t, app, "Mornings", map[string]any{"schedule": map[string]any{"mode": "weekly",
			"weekly": []any{map[string]any{"day": int(time.Now().UTC().Add(48 * time.Hour).Weekday()), "open": "09:00", "close": "10:00"}}}})
		hl := newJoinLink(t, app, hq.ID, nil)
		app.Do(http.MethodGet, "/join/"+hl.Token+"/state", nil, nil).Must(http.StatusOK, &st)
		if st.Open || st.Closed == nil || *st.Closed != "outside_hours" || st.OpensAt == nil || st.OpensAt.Before(time.Now()) {
			t.Fatalf("outside hours %+v", st)
		}
	})
}

// TestJoinBudgets bursts joins from one address, and through one link, on
// PostgreSQL (the shared limiter several processes use): past each budget
// the page answers 429 RATE_LIMITED with Retry-After, and the counts are
// exact. It logs the figures.
func TestJoinBudgets(t *testing.T) {
	app := apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Join.PerAddressPerMinute = 10
		c.Join.PerLinkPerMinute = 15
		c.HTTP.TrustedProxies = []string{"127.0.0.1/32"} // so each request may say its own address
	}))
	q := newLiveQueue(t, app, "Burst", nil)
	l := newJoinLink(t, app, q.ID, map[string]any{"kiosk": true})
	// burst sends n joins at once, the i-th from the address from(i).
	burst := func(token string, n int, from func(i int) string) (ok, limited int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r := app.Do(http.MethodPost, "/join/"+token, map[string]any{}, map[string]string{"X-Forwarded-For": from(i)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Status == http.StatusCreated:
					ok++
				case r.Status == http.StatusTooManyRequests && r.Header.Get("Retry-After") != "":
					limited++
				default:
					t.Errorf("burst: %d %s", r.Status, r.Body)
				}
			}(i)
		}
		wg.Wait()
		return ok, limited
	}
	ok, limited := burst(l.Token, 30, func(int) string { return "203.0.113.7" })
	t.Logf("30 joins at once from one address, budget 10 a minute: %d taken, %d refused (429)", ok, limited)
	if ok != 10 || limited != 20 {
		t.Fatalf("per address: %d taken, %d refused; want 10 and 20", ok, limited)
	}
	// The same link from 20 other addresses: its own budget (15) has 5
	// left.
	ok, limited = burst(l.Token, 20, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) })
	t.Logf("20 joins at once from 20 addresses through a link with 5 of its 15 a minute left: %d taken, %d refused (429)", ok, limited)
	if ok != 5 || limited != 15 {
		t.Fatalf("per link: %d taken, %d refused; want 5 and 15", ok, limited)
	}
	// Another link of the queue is not held back by the first's budget.
	other := newJoinLink(t, app, q.ID, map[string]any{"kiosk": true})
	if ok, _ := burst(other.Token, 1, func(int) string { return "192.0.2.1" }); ok != 1 {
		t.Fatal("another link was refused")
	}
	var n client.TurnPage
	app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?limit=100", nil).Must(http.StatusOK, &n)
	if len(n.Data) != 16 {
		t.Fatalf("%d turns taken, want 16", len(n.Data))
	}
}

// TestJoinDoubleTapRace sends one form's join twenty times at once on
// PostgreSQL, as a double tap on a slow network (and its retries) would:
// one turn is taken, every answer names it.
func TestJoinDoubleTapRace(t *testing.T) {
	app := apptest.Postgres(t, apptest.WithConfig(func(c *config.Config) {
		c.RateLimit.PerMinute = 100000
		c.Join.PerAddressPerMinute = 100000
	}))
	q := newLiveQueue(t, app, "Race", nil)
	l := newJoinLink(t, app, q.ID, nil)
	var mu sync.Mutex
	ids := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var j client.Joined
			r := app.Do(http.MethodPost, "/join/"+l.Token, map[string]any{"idempotencyKey": "form-race-1"}, nil)
			if r.Status != http.StatusCreated {
				t.Errorf("join: %d %s", r.Status, r.Body)
				return
			}
			r.Decode(&j)
			mu.Lock()
			ids[j.TurnID]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	var n client.TurnPage
	app.API(http.MethodGet, "/queue-runs/"+q.RunID+"/turns?limit=100", nil).Must(http.StatusOK, &n)
	if len(ids) != 1 || len(n.Data) != 1 {
		t.Fatalf("20 joins under one key took %d turns (answers named %v)", len(n.Data), ids)
	}
	t.Logf("20 simultaneous joins under one key: %d turn", len(n.Data))
}

// TestRaceJoinLinksAtMost50: 60 concurrent creates for one queue on
// PostgreSQL make exactly 50 live join links; the rest are 409
// TOO_MANY_JOIN_LINKS (docs/architecture.md, "At most N" rules).
func TestRaceJoinLinksAtMost50(t *testing.T) {
	a := raceApp(t)
	q := newLiveQueue(t, a, "Links", nil)
	if n := raceCreates(t, a, 60, "/queues/"+q.ID+"/join-links", func(int) any { return map[string]any{} }, "TOO_MANY_JOIN_LINKS"); n != 50 {
		t.Fatalf("%d join links made for one queue, want 50", n)
	}
}
