package webhooks

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/qms-dev/qms/core/platform"
)

// blockedPrefixes are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose registries) that netip's predicates do not already name
// and that a webhook must not reach: the server's own networks, shared
// carrier space, and ranges that map onto IPv4 addresses or are not
// routable on the Internet.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",         // "this network"
		"100.64.0.0/10",     // CGNAT shared address space
		"192.0.0.0/24",      // IETF protocol assignments
		"192.0.2.0/24",      // documentation
		"198.18.0.0/15",     // benchmarking
		"198.51.100.0/24",   // documentation
		"203.0.113.0/24",    // documentation
		"240.0.0.0/4",       // reserved, and 255.255.255.255 broadcast
		"::/96",             // IPv4-compatible (deprecated), :: and ::1 included
		"64:ff9b::/96",      // NAT64: reaches an IPv4 address, maybe a private one
		"64:ff9b:1::/48",    // local-use NAT64
		"100::/64",          // discard-only
		"2001::/32",         // Teredo: tunnels to an embedded IPv4 address
		"2001:2::/48",       // benchmarking
		"2001:db8::/32",     // documentation
		"2002::/16",         // 6to4: reaches an embedded IPv4 address
		"fec0::/10",         // site-local (deprecated)
		"3fff::/20",         // documentation
		"5f00::/16",         // segment routing SIDs
		"::ffff:0:0:0/96",   // IPv4-translated
		"2001:10::/28",      // ORCHID
		"2001:20::/28",      // ORCHIDv2
		"100:0:0:1::/64",    // dummy prefix
		"fc00::/7",          // unique local (also IsPrivate)
		"ff00::/8",          // multicast (also IsMulticast)
		"fe80::/10",         // link-local (also IsLinkLocalUnicast)
		"169.254.0.0/16",    // link-local, cloud metadata services
		"224.0.0.0/4",       // multicast
		"127.0.0.0/8",       // loopback
		"10.0.0.0/8",        // private
		"172.16.0.0/12",     // private
		"192.168.0.0/16",    // private
		"192.88.99.0/24",    // 6to4 relay anycast (deprecated)
		"2620:4f:8000::/48", // AS112-v6
		"2001:1::1/128",     // port control protocol anycast
		"2001:1::2/128",     // TURN anycast
		"2001:3::/32",       // AMT
		"2001:4:112::/48",   // AS112-v6
		"2001:30::/28",      // DRIP
		"192.31.196.0/24",   // AS112-v4
		"192.52.193.0/24",   // AMT
		"192.175.48.0/24",   // AS112 direct delegation
		"0000::/8",          // reserved by IETF (::/96 and ::ffff:0:0/96 inside)
		"0100::/8",          // reserved by IETF
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// globalUnicast is IPv6's global unicast space, 2000::/3.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// AddressAllowed reports whether a webhook may be sent to ip: a public
// unicast address. Loopback, private, link-local, unique-local, multicast,
// CGNAT, unspecified and the other special-purpose ranges are refused,
// whatever their spelling: an IPv4-mapped IPv6 address (::ffff:10.0.0.1) is
// judged as the IPv4 address it maps, and the IPv6 ranges that tunnel to an
// IPv4 address (NAT64, 6to4, Teredo) are refused outright.
func AddressAllowed(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	// What is left of IPv6 must be global unicast (2000::/3): the rest of
	// the space is unassigned or reserved.
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return false
	}
	return true
}

// URLPolicy checks endpoint urls when an endpoint is created.
type URLPolicy struct {
	// AllowPrivate lifts the address checks (local development and tests:
	// webhooks.allow_private).
	AllowPrivate bool
	// Resolver resolves host names; nil uses net.DefaultResolver.
	Resolver Resolver
}

// resolveTimeout bounds the lookup of an endpoint's host at creation.
const resolveTimeout = 5 * time.Second

// Check parses raw and refuses, with a VALIDATION_ERROR on path, what is not
// an absolute http or https URL of at most MaxURLLength characters, and,
// unless AllowPrivate, a url whose host is or resolves to an address that
// AddressAllowed refuses. A host that does not exist is refused too (it is
// a typo); a lookup that fails for another reason (a DNS server down) lets
// the url through, since every delivery checks the address it dials anyway.
func (p URLPolicy) Check(ctx context.Context, path, raw string) (*url.URL, error) {
	var v platform.Validator
	v.Len(path, raw, 1, MaxURLLength)
	if err := v.Err(); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, platform.InvalidField(path, "uri", "must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, platform.InvalidField(path, "uri", "must be an http or https URL")
	}
	if port := u.Port(); port != "" && !validPort(port) {
		return nil, platform.InvalidField(path, "uri", "has an invalid port")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if p.AllowPrivate {
		return u, nil
	}
	refuse := func(why string) error {
		return platform.InvalidField(path, "public_host", "must reach a public address: "+why)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !AddressAllowed(ip) {
			return nil, refuse(ip.String() + " is a loopback, private, link-local or otherwise reserved address")
		}
		return u, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil, refuse(host + " is the local machine")
	}
	if numericLooking(host) {
		// 127.1, 0x7f.0.0.1, 2130706433: not DNS names, but some resolvers
		// read them as IPv4 addresses. Nobody needs them for a webhook.
		return nil, platform.InvalidField(path, "uri", "has a host that is neither a DNS name nor a standard IP address")
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := res.LookupNetIP(lctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, refuse(host + " does not resolve")
		}
		return u, nil
	}
	for _, a := range addrs {
		if !AddressAllowed(a) {
			return nil, refuse(host + " resolves to " + a.Unmap().String() + ", a loopback, private, link-local or otherwise reserved address")
		}
	}
	return u, nil
}

func validPort(s string) bool {
	if len(s) > 5 {
		return false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

// numericLooking reports whether the last label of host starts with a
// digit: no top-level domain does, but the inet_aton spellings of IPv4
// addresses (127.1, 0x7f.1, 017700000001) all do.
func numericLooking(host string) bool {
	last := host
	if i := strings.LastIndexByte(host, '.'); i >= 0 {
		last = host[i+1:]
	}
	return last != "" && last[0] >= '0' && last[0] <= '9'
}
