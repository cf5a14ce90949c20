package joinhttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// The device cookie: the turns a phone took through join pages, by queue,
// signed so a page cannot forge or shrink what the server wrote (it can
// still drop the cookie, as it can drop everything: the address budget is
// the backstop). It holds ids only, nothing a customer typed.
const (
	cookieName = "qms_join"
	// cookieTurns is how many turn ids a queue keeps in the cookie (the
	// newest): more than MaxOpenTurnsPerDevice, so turns finished since
	// do not hide open ones.
	cookieTurns = 10
	// cookieQueues bounds the queues the cookie remembers (the newest).
	cookieQueues = 8
	cookieMaxAge = 24 * time.Hour
)

// deviceTurns is the cookie's content.
type deviceTurns struct {
	// Q are the queues, newest last, each with its turn ids.
	Q []deviceQueue `json:"q"`
}

type deviceQueue struct {
	ID    string   `json:"i"`
	Turns []string `json:"t"`
}

// signer signs and checks the cookie with its key.
type signer struct{ key []byte }

func (s signer) mac(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// read returns the cookie's content; an absent, malformed or unsigned
// cookie reads as empty.
func (s signer) read(c *fiber.Ctx) deviceTurns {
	raw := c.Cookies(cookieName)
	payload, sig, ok := strings.Cut(raw, ".")
	if !ok || len(raw) > 4096 || !hmac.Equal([]byte(sig), []byte(s.mac(payload))) {
		return deviceTurns{}
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return deviceTurns{}
	}
	var d deviceTurns
	if json.Unmarshal(b, &d) != nil {
		return deviceTurns{}
	}
	return d
}

// turnsOf returns the ids the cookie holds for queueID.
func (d deviceTurns) turnsOf(queueID string) []string {
	for _, q := range d.Q {
		if q.ID == queueID {
			return q.Turns
		}
	}
	return nil
}

// add records turnID under queueID (once), keeping the newest.
func (d *deviceTurns) add(queueID, turnID string) {
	var q deviceQueue
	kept := d.Q[:0:0]
	for _, x := range d.Q {
		if x.ID == queueID {
			q = x
			continue
		}
		kept = append(kept, x)
	}
	q.ID = queueID
	for _, id := range q.Turns {
		if id == turnID {
			turnID = ""
		}
	}
	if turnID != "" {
		q.Turns = append(q.Turns, turnID)
	}
	if len(q.Turns) > cookieTurns {
		q.Turns = q.Turns[len(q.Turns)-cookieTurns:]
	}
	kept = append(kept, q)
	if len(kept) > cookieQueues {
		kept = kept[len(kept)-cookieQueues:]
	}
	d.Q = kept
}

// write sets the cookie: HttpOnly (no script reads it), Lax, only sent
// to the join pages, Secure when the request came over HTTPS.
func (s signer) write(c *fiber.Ctx, d deviceTurns) {
	b, _ := json.Marshal(d)
	payload := base64.RawURLEncoding.EncodeToString(b)
	c.Cookie(&fiber.Cookie{Name: cookieName, Value: payload + "." + s.mac(payload), Path: Prefix + "/",
		MaxAge: int(cookieMaxAge / time.Second), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: c.Protocol() == "https"})
}
