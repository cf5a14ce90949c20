// Package httpx is the REST platform every qms endpoint is built on: the
// fiber application and its error envelope, request ids, panic recovery,
// access logging, strict JSON decoding, API-key authentication, scope
// checks, rate-limit headers and cursor pagination.
//
// Handlers return errors; they never write error responses themselves. The
// error handler installed by [NewApp] turns every error (domain errors of
// core/platform, fiber's own errors, and anything else) into the envelope of
// spec section 7:
//
//	{"error":{"code":"...","message":"...","details":{},"requestId":"req_..."}}
//
// A typical route:
//
//	api := app.Group("/api/v1", httpx.Auth(authn), httpx.RateLimit(limiter, 120, nil))
//	api.Get("/queues/:queueId", httpx.Require(accounts.ScopeQueuesRead), h.getQueue)
package httpx
