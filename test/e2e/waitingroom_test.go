package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// TestWaitingRoomBehindOneAddress is the venue case of issue 32: 500
// phones on the venue's Wi-Fi (one public address) open their ticket pages
// within a minute, under the default budgets (120 a minute for API keys
// and addresses). Every phone gets its page, its files, its ticket and its
// live stream: static files are not rate limited, and the token-opened
// routes spend each link's own budget and the address's waiting-room
// budget (3,000 a minute by default). A phone that loads its page again
// asks for the files with their ETags and gets 304s. And the address is
// still bounded: past its waiting-room budget every token-opened route is
// 429 (a flood against many tokens, here unknown ones), and one link
// hammered on its own stops at its per-link budget.
func TestWaitingRoomBehindOneAddress(t *testing.T) {
	apptest.Storages(t, func(t *testing.T, start func(t testing.TB, opts ...apptest.Option) *apptest.App) {
		app := start(t)
		if app.Config.RateLimit.PerMinute != 120 || app.Config.RateLimit.WaitingRoomPerMinute != 3000 ||
			app.Config.RateLimit.PerTokenPerMinute != 60 {
			t.Fatalf("the venue case is meant for the default budgets, got %+v", app.Config.RateLimit)
		}
		const phones = 500
		q := newLiveQueue(t, app, "Venue", nil)
		// The receptionist's side: 1,000 API calls, spread over keys so
		// that the API's own budget (120 a minute a key) is not what this
		// measures.
		links := make([]string, phones)
		var wg sync.WaitGroup
		var setupErr atomic.Value
		const perKey = 50
		for k := 0; k < phones/perKey; k++ {
			key := app.NewKey(app.AccountID, "all")
			wg.Add(1)
			go func(k int, key string) {
				defer wg.Done()
				for i := k * perKey; i < (k+1)*perKey; i++ {
					var turn struct{ ID string }
					if r := app.APIWith(key, http.MethodPost, "/queue-runs/"+q.RunID+"/turns", map[string]any{}); r.Status != http.StatusCreated {
						setupErr.Store(fmt.Sprintf("turn %d: %d %s", i, r.Status, r.Body))
						return
					} else {
						r.Decode(&turn)
					}
					var l struct{ Token string }
					if r := app.APIWith(key, http.MethodPost, "/turns/"+turn.ID+"/ticket-links", nil); r.Status != http.StatusCreated {
						setupErr.Store(fmt.Sprintf("link %d: %d %s", i, r.Status, r.Body))
						return
					} else {
						r.Decode(&l)
					}
					links[i] = l.Token
				}
			}(k, key)
		}
		wg.Wait()
		if e := setupErr.Load(); e != nil {
			t.Fatal(e)
		}

		// The phones, all from 127.0.0.1, sixteen at a time.
		hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
		t0 := time.Now()
		var statuses sync.Map // "what status" -> count
		count := func(what string, status int) {
			v, _ := statuses.LoadOrStore(fmt.Sprintf("%s %d", what, status), new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}
		assetRe := regexp.MustCompile(`(?:src|href)="(/[^"]+\?v=[0-9a-f]+)"`)
		var firstAssets []string
		var once sync.Once
		phone := func(token string) error {
			base := app.BaseURL + "/ticket/" + token
			page, status, _, err := get(hc, base, nil)
			count("page", status)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("page: %d %v", status, err)
			}
			assets := assetRe.FindAllStringSubmatch(page, -1)
			if len(assets) < 3 {
				return fmt.Errorf("page links to %d versioned files: %s", len(assets), page)
			}
			once.Do(func() {
				for _, a := range assets {
					firstAssets = append(firstAssets, a[1])
				}
			})
			for _, a := range assets {
				_, status, h, err := get(hc, app.BaseURL+a[1], nil)
				count("asset", status)
				if err != nil || status != http.StatusOK || !strings.Contains(h.Get("Cache-Control"), "immutable") || h.Get("ETag") == "" {
					return fmt.Errorf("asset %s: %d %v %v", a[1], status, h, err)
				}
			}
			// The catalogue the script asks for, with the script's version.
			v := assets[0][1][strings.Index(assets[0][1], "?v="):]
			if _, status, _, err := get(hc, app.BaseURL+"/i18n/en.json"+v, nil); err != nil || status != http.StatusOK {
				count("asset", status)
				return fmt.Errorf("catalogue: %d %v", status, err)
			}
			count("asset", http.StatusOK)
			if _, status, _, err := get(hc, base+"/state", nil); err != nil || status != http.StatusOK {
				count("state", status)
				return fmt.Errorf("state: %d %v", status, err)
			}
			count("state", http.StatusOK)
			status, err = firstTicketEvent(hc, base+"/events")
			count("events", status)
			if err != nil {
				return fmt.Errorf("events: %d %v", status, err)
			}
			return nil
		}
		var failures atomic.Int64
		var firstFailure atomic.Value
		jobs := make(chan string)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for tok := range jobs {
					if err := phone(tok); err != nil {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, err.Error())
					}
				}
			}()
		}
		for _, tok := range links {
			jobs <- tok
		}
		close(jobs)
		wg.Wait()
		took := time.Since(t0)
		summary := map[string]int64{}
		statuses.Range(func(k, v any) bool { summary[k.(string)] = v.(*atomic.Int64).Load(); return true })
		t.Logf("%d phones from one address in %v: %v", phones, took.Round(time.Millisecond), summary)
		if n := failures.Load(); n > 0 {
			t.Fatalf("%d of %d phones did not get their ticket page (first: %v); statuses %v", n, phones, firstFailure.Load(), summary)
		}
		if took > 50*time.Second {
			t.Fatalf("the phones took %v: the budgets are per minute, so this proves nothing", took)
		}

		// A phone loading the page again revalidates its files: 304.
		for _, a := range firstAssets {
			_, status, h, err := get(hc, app.BaseURL+a, nil)
			if err != nil || status != http.StatusOK {
				t.Fatalf("asset %s: %d %v", a, status, err)
			}
			if _, status, _, _ := get(hc, app.BaseURL+a, map[string]string{"If-None-Match": h.Get("ETag")}); status != http.StatusNotModified {
				t.Fatalf("asset %s with its ETag: %d, want 304", a, status)
			}
		}

		// One link hammered: its own budget (60 a minute) runs out, and
		// the 429 says when to come back.
		hammered := links[0]
		limited := 0
		for i := 0; i < 70; i++ {
			_, status, h, err := get(hc, app.BaseURL+"/ticket/"+hammered+"/state", nil)
			if err != nil {
				t.Fatal(err)
			}
			if status == http.StatusTooManyRequests {
				limited++
				if h.Get("Retry-After") == "" || h.Get("X-RateLimit-Limit") != "60" {
					t.Fatalf("429 without Retry-After or the link's limit: %v", h)
				}
			}
		}
		// Each link already spent 3 requests.
		if limited != 70-(60-3) {
			t.Fatalf("one link, 70 more requests: %d refused, want %d", limited, 70-57)
		}
		// Another link is not affected.
		if _, status, _, _ := get(hc, app.BaseURL+"/ticket/"+links[1]+"/state", nil); status != http.StatusOK {
			t.Fatalf("another link after one was hammered: %d", status)
		}

		// A flood from the same address against many (unknown) tokens:
		// bounded by the address's waiting-room budget. 3,000 a minute,
		// 1,500 spent by the phones, 61 by the hammered and the other link.
		let, refused := 0, 0
		for i := 0; i < 1500; i++ {
			_, status, _, err := get(hc, app.BaseURL+fmt.Sprintf("/ticket/qmst_%032d/state", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if status == http.StatusTooManyRequests {
				refused++
			} else {
				let++
			}
		}
		if want := 3000 - 3*phones - 71; let != want || refused != 1500-want {
			t.Fatalf("flood of 1,500 unknown tokens from the waiting room's address: %d let through, %d refused; want %d let through", let, refused, want)
		}
		// Static files are still served to that address.
		if _, status, _, _ := get(hc, app.BaseURL+firstAssets[0], nil); status != http.StatusOK {
			t.Fatalf("a static file after the flood: %d", status)
		}
	})
}

// get reads url with headers.
func get(hc *http.Client, url string, headers map[string]string) (string, int, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", 0, nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, resp.Header, err
}

// firstTicketEvent opens a ticket's stream and reads up to its first
// "ticket" event, then closes it.
func firstTicketEvent(hc *http.Client, url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, fmt.Errorf("%s", b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: ticket" {
			return resp.StatusCode, nil
		}
	}
	return resp.StatusCode, fmt.Errorf("the stream ended before its ticket: %v", sc.Err())
}
