package httpx

import (
	"bytes"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies says how qms sits behind reverse proxies: whose forwarding
// headers count, and the base of the URLs it returns.
type Proxies struct {
	// PublicURL, when set (https://queues.example.com), is the base of
	// every URL qms returns. When empty, URLs are built from the request's
	// own scheme and Host header.
	PublicURL string
	// Trusted are the proxies' addresses: only from them do
	// X-Forwarded-For (the client's address, for rate limits and logs) and
	// X-Forwarded-Proto (the scheme of built URLs) count. X-Forwarded-Host
	// never does: set PublicURL.
	Trusted []netip.Prefix
}

// setClient installs p for the request, and works out the client's
// address once. NewApp's middleware does it first, so the request's state
// is the first of its locals.
func setClient(c *fiber.Ctx, st *state, p *Proxies) {
	st.proxies = p
	st.clientIP, st.hasIP = p.client(c), true
}

// ClientIP is the address of the client: the peer's, or, when the peer is
// a trusted proxy, the nearest address in X-Forwarded-For that is not a
// trusted proxy (addresses further left are the client's to write, so
// they are believed only past trusted hops).
func ClientIP(c *fiber.Ctx) string {
	if st := stateOf(c); st != nil && st.hasIP {
		return st.clientIP
	}
	return peer(c).String()
}

// PublicBase is the base URL (scheme://host, no trailing slash) of the
// URLs qms returns for this request.
func PublicBase(c *fiber.Ctx) string {
	var p *Proxies
	if st := stateOf(c); st != nil {
		p = st.proxies
	}
	if p != nil && p.PublicURL != "" {
		return p.PublicURL
	}
	scheme := "http"
	if c.Context().IsTLS() {
		scheme = "https"
	}
	if p != nil && p.trusts(peer(c)) {
		proto, _, _ := bytes.Cut(c.Request().Header.Peek(fiber.HeaderXForwardedProto), []byte(","))
		switch v := strings.ToLower(strings.TrimSpace(string(proto))); v {
		case "http", "https":
			scheme = v
		}
	}
	return scheme + "://" + string(c.Request().Host())
}

func peer(c *fiber.Ctx) netip.Addr {
	a, _ := peerOf(c)
	return a
}

// PeerAddresser is a connection that knows its peer's address already:
// the server's listener works it out, and spells it, once per
// connection rather than on every request (an allocation and about 1 %
// of a memory-mode GET's handler CPU, issue 30).
type PeerAddresser interface {
	PeerAddr() (addr netip.Addr, text string)
}

// peerOf is the peer's address, and its spelling when the connection
// knows it ("" otherwise).
func peerOf(c *fiber.Ctx) (netip.Addr, string) {
	if pa, ok := c.Context().Conn().(PeerAddresser); ok {
		if a, text := pa.PeerAddr(); a.IsValid() {
			return a, text
		}
	}
	a, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.Unmap(), ""
}

func (p *Proxies) trusts(a netip.Addr) bool {
	for _, n := range p.Trusted {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

func (p *Proxies) client(c *fiber.Ctx) string {
	addr, text := peerOf(c)
	if !p.trusts(addr) {
		if text == "" {
			text = addr.String()
		}
		return text
	}
	var hops []string
	for _, v := range c.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
		hops = append(hops, strings.Split(string(v), ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // unreadable: the last address read is as far as it goes
		}
		addr = a.Unmap()
		if !p.trusts(addr) {
			break
		}
	}
	return addr.String()
}
