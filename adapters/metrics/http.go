package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/qms-dev/qms/adapters/http/httpx"
)

// Middleware records every request that reaches it: qms_http_requests_total
// and qms_http_request_duration_seconds by route template, method and
// status, and qms_http_rate_limited_total for 429s (unlabelled: the limiter refuses
// before routing, so the route is not known yet). Mount it with app.Use
// right after the platform middleware of httpx.NewApp, before any route.
//
// Like httpx.AccessLog it runs the app's error handler itself on an error
// from the chain, so it sees the status the client really gets (and the
// route template, which the error handler marks "-" for 404 and 405), then
// returns nil so that the error is not handled twice. A panic is recorded as
// a 500 and passed on to httpx.Recover.
func (m *Metrics) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		// The access log's start (httpx.RequestStart), read before the
		// few middleware between the two: one reading of the clock less.
		start := httpx.RequestStart(c)
		defer func() {
			if r := recover(); r != nil {
				m.observe(c, http.StatusInternalServerError, time.Since(start))
				panic(r)
			}
		}()
		if err := c.Next(); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		m.observe(c, c.Response().StatusCode(), time.Since(start))
		return nil
	}
}

func (m *Metrics) observe(c *fiber.Ctx, status int, d time.Duration) {
	s := m.seriesOf(c, status)
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
	if status == http.StatusTooManyRequests {
		m.rateLimited.Inc()
	}
}

// seriesKey names the series of one route template, method and status.
// Each is from a small closed set (templates, not paths; the methods'
// constants; statuses), so the cache of series stays small.
type seriesKey struct {
	route, method string
	status        int
}

// series are the request counter and the duration histogram of one
// seriesKey, resolved once: WithLabelValues hashes and checks its labels
// and takes the vector's lock on every call, twice a request.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// routeKey names the series of a request that a route of its own method
// answered, by the route itself: a pointer and a number to hash, where
// seriesKey hashes the template and the method's name, and the method
// label was a look-up of its own (issue 30, P1).
type routeKey struct {
	route  *fiber.Route
	status int
}

// seriesOf is c's series: by its route when the route is of c's method
// and its template is c's label (the same series httpSeries finds under
// the label), by the label otherwise (no route, a middleware's, or a
// request the error handler marked unmatched).
func (m *Metrics) seriesOf(c *fiber.Ctx, status int) *series {
	template := httpx.RouteTemplate(c)
	r := c.Route()
	if r == nil || r.Path != template || r.Method != c.Method() {
		return m.httpSeries(template, methodLabel(c.Method()), status)
	}
	k := routeKey{r, status}
	if s, ok := m.series.Load(k); ok {
		return s.(*series)
	}
	s := m.httpSeries(template, methodLabel(r.Method), status)
	m.series.Store(k, s)
	return s
}

func (m *Metrics) httpSeries(route, method string, status int) *series {
	k := seriesKey{route, method, status}
	if s, ok := m.series.Load(k); ok {
		return s.(*series)
	}
	code := strconv.Itoa(status)
	s, _ := m.series.LoadOrStore(k, &series{
		requests: m.requests.WithLabelValues(route, method, code),
		duration: m.duration.WithLabelValues(route, method, code),
	})
	return s.(*series)
}

// methods are the method label's values. A client can send any token as a
// method, and fiber's c.Method() aliases a buffer fasthttp reuses, so the
// label is always one of these constants, never the request's string.
var methods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions,
}

func methodLabel(m string) string {
	if l, ok := methods[m]; ok {
		return l
	}
	return "OTHER"
}

// Handler serves the registry in the Prometheus exposition format, for
// GET /metrics on a fiber app.
func (m *Metrics) Handler() fiber.Handler {
	return adaptor.HTTPHandler(m.HTTPHandler())
}

// HTTPHandler is Handler for net/http, for the separate metrics listener.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		Registry:          m.Registry, // counts promhttp's own scrape errors
		EnableOpenMetrics: true,
		Timeout:           10 * time.Second,
	})
}
