package joinhttp

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/signed"
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
	// cookieMaxLen bounds the cookie a request may bring back: ten turn
	// ids in eight queues are well under it.
	cookieMaxLen = 4096
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

// signer signs and checks the cookie: "<base64url JSON>.<base64url tag>",
// the full 32-byte tag (signed.Token).
type signer struct{ s signed.Signer }

func newSigner(key []byte) (signer, error) {
	s, err := signed.New(key, signed.MaxTagLen)
	return signer{s: s}, err
}

// read returns the cookie's content; an absent, malformed or unsigned
// cookie reads as empty.
func (s signer) read(c *fiber.Ctx) deviceTurns {
	b, ok := s.s.Verify(c.Cookies(cookieName), cookieMaxLen)
	if !ok {
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
	c.Cookie(&fiber.Cookie{Name: cookieName, Value: s.s.Token(b), Path: Prefix + "/",
		MaxAge: int(cookieMaxAge / time.Second), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: c.Protocol() == "https"})
}
