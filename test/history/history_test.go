package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op is one request of the history and its answer, as a client saw it.
type Op struct {
	Index  int
	Client int // -1 for the checker's own requests (quiescent reads, drains)
	Proc   int // the process the request went to
	Kind   string
	Run    string // the run's name (A, B, C, D), when the op targets a run
	Turn   string // the turn or appointment id the op targets
	Method string
	Path   string
	Req    []byte
	Key    string // idempotency key sent, if any
	Start  time.Time
	End    time.Time
	Status int
	Body   []byte
	// Replayed is the Idempotent-Replayed header of a create.
	Replayed bool
	// Err is the transport error, if the request got no answer.
	Err string
}

// OK reports a 2xx answer.
func (o *Op) OK() bool { return o.Status >= 200 && o.Status < 300 }

// Code is error.code of an error answer.
func (o *Op) Code() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(o.Body, &e)
	return e.Error.Code
}

// joined is the join page's answer.
type joined struct {
	TurnID      string
	DisplayCode string
	Status      string
	Ticket      string
	Replayed    bool
}

// Joined decodes a join page's answer.
func (o *Op) Joined() joined {
	var j joined
	_ = json.Unmarshal(o.Body, &j)
	return j
}

// transferred is a transfer's answer: the source turn and the new one.
type transferred struct{ From, To turnView }

// Transferred decodes a transfer's answer.
func (o *Op) Transferred() transferred {
	var t transferred
	_ = json.Unmarshal(o.Body, &t)
	return t
}

// TurnView decodes a turn answer.
func (o *Op) TurnView() turnView {
	var v turnView
	_ = json.Unmarshal(o.Body, &v)
	return v
}

func (o *Op) String() string {
	s := fmt.Sprintf("#%d client %d proc %d %s %s", o.Index, o.Client, o.Proc, o.Method, o.Path)
	if len(o.Req) > 0 {
		s += " " + string(o.Req)
	}
	if o.Err != "" {
		return s + " -> transport error: " + o.Err
	}
	body := string(o.Body)
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("%s -> %d %s (%s..%s)", s, o.Status, body,
		o.Start.Format("15:04:05.000"), o.End.Format("15:04:05.000"))
}

// turnView is the part of the turn view the checks read.
type turnView struct {
	ID          string
	QueueRunID  string
	QueueID     string
	Number      int
	DisplayCode string
	Status      string
	Priority    string
	StationID   *string
	CallCount   int
	Reentries   int
	Position    *int
	ArrivedAt   *time.Time
	CalledAt    *time.Time
	FinishedAt  *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// History is every op in the order they were sent.
type History struct {
	mu  sync.Mutex
	ops []*Op
}

func (h *History) add(o *Op) {
	h.mu.Lock()
	o.Index = len(h.ops)
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

// Ops returns the ops so far, by start time.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	out := append([]*Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// caller sends requests to the processes of a backend and records them.
type caller struct {
	h    *History
	http *http.Client
	urls []string
	key  string
}

func newCaller(h *History, urls []string, key string) *caller {
	tr := &http.Transport{MaxIdleConns: 200, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	return &caller{h: h, http: &http.Client{Transport: tr, Timeout: 60 * time.Second}, urls: urls, key: key}
}

// req describes a request before it is sent.
type req struct {
	client, proc int
	kind, run    string
	turn         string
	method, path string
	body         any
	key          string
	// public sends the request to the path as given, without the API key:
	// the customer's pages (join and ticket), not /api/v1.
	public bool
}

// do sends r to /api/v1 of its process (or to r.path as given, when
// public) and records it.
func (c *caller) do(r req) *Op {
	o := &Op{Client: r.client, Proc: r.proc % len(c.urls), Kind: r.kind, Run: r.run, Turn: r.turn,
		Method: r.method, Path: r.path, Key: r.key}
	var rd io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			panic(err)
		}
		o.Req = b
		rd = bytes.NewReader(b)
	}
	base := c.urls[o.Proc] + "/api/v1"
	if r.public {
		base = c.urls[o.Proc]
	}
	hr, err := http.NewRequest(r.method, base+r.path, rd)
	if err != nil {
		panic(err)
	}
	if !r.public {
		hr.Header.Set("X-API-Key", c.key)
	}
	if r.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	o.Start = time.Now()
	resp, err := c.http.Do(hr)
	if err != nil {
		o.End = time.Now()
		o.Err = err.Error()
		c.h.add(o)
		return o
	}
	o.Body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	o.End = time.Now()
	if err != nil {
		o.Err = err.Error()
	}
	o.Status = resp.StatusCode
	o.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	if o.Kind == "next" && o.Status == http.StatusCreated {
		o.Turn = o.TurnView().ID // so the ops of a turn include the next that took it
	}
	if o.Kind == "join" && o.Status == http.StatusCreated {
		o.Turn = o.Joined().TurnID // so the ops of a turn include the join that took it
	}
	c.h.add(o)
	return o
}

// opSummary counts the client ops by kind and answer.
func opSummary(ops []*Op) string {
	counts := map[string]int{}
	for _, o := range ops {
		if o.Client < 0 {
			continue
		}
		k := fmt.Sprintf("%s %d", o.Kind, o.Status)
		if o.Err != "" {
			k = o.Kind + " ERR"
		} else if code := o.Code(); code != "" {
			k += " " + code
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-50s %6d", k, counts[k])
	}
	return b.String()
}
