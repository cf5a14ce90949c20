// Package fakeprovider is a local stand-in for the messaging providers qms
// sends through: Twilio Programmable Messaging and the WhatsApp Business
// Cloud API. Each fake checks the request as the provider documents it
// (path, auth, form fields or JSON), answers as the provider does,
// errors included, and sends the provider's callbacks (delivery statuses
// and customer replies) signed as the provider signs them. Every exchange
// is recorded, so a test can print the conversation.
//
// Numbers pick the errors, after Twilio's test credentials' magic numbers:
// +15005550001 is not a valid number, +15005550004 has opted out,
// +15005550009 cannot receive messages; FailNext makes the next answers
// 429 or 5xx.
package fakeprovider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Magic numbers.
const (
	InvalidNumber  = "+15005550001"
	OptedOutNumber = "+15005550004"
	NotMobile      = "+15005550009"
)

// Received is a message the fake accepted.
type Received struct {
	At time.Time
	ID string
	// Account is the provider account that sent it (Twilio's SID).
	Account string
	Channel string // SMS or WHATSAPP
	// Sender is the messaging service used instead of From, if any.
	Sender     string
	To, From   string
	Body       string
	Template   string
	Language   string
	Params     []string
	StatusHook string
}

// Exchange is one request and its answer, for the record.
type Exchange struct {
	Dir     string // "qms→provider" or "provider→qms"
	Method  string
	URL     string
	Header  string
	Body    string
	Status  int
	Answer  string
	Elapsed time.Duration
}

type base struct {
	Server *httptest.Server
	mu     sync.Mutex
	msgs   []Received
	fail   []int
	failTo map[string][]int
	log    []Exchange
	seq    int
	// Delay holds each send's answer (a slow provider).
	Delay time.Duration
}

// URL is the fake's base URL.
func (b *base) URL() string { return b.Server.URL }

// Close stops the fake.
func (b *base) Close() { b.Server.Close() }

// FailNext makes the next n sends answer status (429, 500, 503...).
func (b *base) FailNext(status, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range n {
		b.fail = append(b.fail, status)
	}
}

// FailNextFor makes the next n sends to number to answer status.
func (b *base) FailNextFor(to string, status, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failTo == nil {
		b.failTo = map[string][]int{}
	}
	for range n {
		b.failTo[to] = append(b.failTo[to], status)
	}
}

func (b *base) nextFailure(to string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.failTo[to]; len(f) > 0 {
		b.failTo[to] = f[1:]
		return f[0]
	}
	if len(b.fail) == 0 {
		return 0
	}
	s := b.fail[0]
	b.fail = b.fail[1:]
	return s
}

// Messages are the messages accepted so far.
func (b *base) Messages() []Received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Received(nil), b.msgs...)
}

// Wait waits until n messages were accepted, at most d.
func (b *base) Wait(n int, d time.Duration) []Received {
	end := time.Now().Add(d)
	for {
		ms := b.Messages()
		if len(ms) >= n || time.Now().After(end) {
			return ms
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *base) accept(r Received) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, r)
}

func (b *base) nextID(prefix string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	return fmt.Sprintf("%s%032d", prefix, b.seq)
}

func (b *base) record(e Exchange) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.log) < 1000 {
		b.log = append(b.log, e)
	}
}

// Conversation is the record of every exchange, as text.
func (b *base) Conversation() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, e := range b.log {
		fmt.Fprintf(&s, "%s %s %s\n", e.Dir, e.Method, e.URL)
		if e.Header != "" {
			fmt.Fprintf(&s, "  %s\n", e.Header)
		}
		fmt.Fprintf(&s, "  > %s\n  < %d %s\n", e.Body, e.Status, e.Answer)
	}
	return s.String()
}

func post(client *http.Client, url, contentType, body string, headers map[string]string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", contentType)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, sb.String(), nil
}
