// Package webhookclient sends webhook deliveries over HTTP: the
// webhooks.Sender of the application.
//
// It is built to call URLs chosen by customers without letting them reach
// inside the network the service runs in (SSRF): the address of every
// connection is checked when it is dialled, after DNS resolution, so a host
// name that resolves to a public address when the endpoint is created and
// to a private one later (DNS rebinding) is still refused. No proxy from the
// environment is used (the check would then apply to the proxy), redirects
// are not followed, every request is bounded in time, and at most a small
// excerpt of a response body is read.
package webhookclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/qms-dev/qms/core/webhooks"
)

// Headers of a delivery request (spec section 6).
const (
	HeaderEvent     = "X-Service-Event"
	HeaderDelivery  = "X-Service-Delivery"
	HeaderSignature = "X-Service-Signature"
)

// Defaults of Options.
const (
	DefaultMaxExcerpt = 1 << 10
	UserAgent         = "qms-webhooks/1"
)

// Options tune a Client.
type Options struct {
	// AllowPrivate lets requests reach loopback, private and other reserved
	// addresses (webhooks.allow_private: local development and tests).
	AllowPrivate bool
	// Timeout bounds one request, from dialling to the end of the body
	// excerpt; zero is webhooks.ResponseTimeout.
	Timeout time.Duration
	// MaxExcerpt bounds what is read of a response body; zero is
	// DefaultMaxExcerpt.
	MaxExcerpt int
}

// Client is a webhooks.Sender over net/http.
type Client struct {
	http       *http.Client
	maxExcerpt int
}

var _ webhooks.Sender = (*Client)(nil)

// New returns a Client. Its connections are pooled: a receiver that gets
// many deliveries reuses a few connections, each checked when dialled.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = webhooks.ResponseTimeout
	}
	if opts.MaxExcerpt <= 0 {
		opts.MaxExcerpt = DefaultMaxExcerpt
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = refusePrivate
	}
	transport := &http.Transport{
		// Never a proxy: the address checked must be the receiver's own.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// Only an excerpt is read; compression would only make a small
		// response expand on our side.
		DisableCompression: true,
	}
	return &Client{
		http: &http.Client{
			Transport: transport,
			Timeout:   opts.Timeout,
			// A redirect is an answer, not a 2xx: a failed attempt. Following
			// it would let a public receiver point the service anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		maxExcerpt: opts.MaxExcerpt,
	}
}

// BlockedAddressError is the error of a dial refused by the SSRF check.
type BlockedAddressError struct {
	Addr netip.Addr
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s: a loopback, private, link-local or otherwise reserved address (SSRF protection)", e.Addr)
}

// refusePrivate is the dialer's Control hook: it runs after DNS resolution,
// with the very address about to be connected to.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhookclient: unexpected dial address %q: %w", address, err)
	}
	if !webhooks.AddressAllowed(ap.Addr()) {
		return &BlockedAddressError{Addr: ap.Addr().Unmap().WithZone("")}
	}
	return nil
}

// Send posts one delivery and reports how the receiver answered. It never
// returns a Go error: a failure to get an answer is Result.Err.
func (c *Client) Send(ctx context.Context, r webhooks.Request) webhooks.Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return webhooks.Result{Err: fmt.Errorf("invalid url: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderEvent, r.Event)
	req.Header.Set(HeaderDelivery, r.DeliveryID)
	req.Header.Set(HeaderSignature, r.Signature)
	resp, err := c.http.Do(req)
	if err != nil {
		return webhooks.Result{Err: describe(ctx, err)}
	}
	defer resp.Body.Close()
	// A short body is read whole, so the connection can be reused; a long
	// one is cut, and closing it unread drops the connection.
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxExcerpt)))
	return webhooks.Result{Status: resp.StatusCode, Excerpt: excerpt}
}

// describe turns a transport error into what the delivery log shows: the
// cause, without Go's `Post "url":` wrapping. A timeout wraps
// context.DeadlineExceeded, however net/http reported it.
func describe(ctx context.Context, err error) error {
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		return blocked
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return context.DeadlineExceeded
		}
		return ue.Err
	}
	return err
}
