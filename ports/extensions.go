package ports

// The extension points of the application: fx value groups and named
// values through which a module contributes to another part of the
// application without importing it. A module provides into a group with
// fx.ResultTags(ports.InGroup(ports.GroupJobs)) and reads one with a
// struct field tagged `group:"jobs"` in an fx.In parameter struct (struct
// tags cannot name constants: bootstrap's TestTagsNameExtensionPoints fails
// on a literal that is not one of these).
const (
	// GroupJobs collects JobKind values. Every kind is registered with the
	// job runner (memory or River) before it starts.
	GroupJobs = "jobs"
	// GroupMetrics collects prometheus.Collector values, registered on the
	// /metrics registry (modules/metrics). The PostgreSQL adapter set
	// contributes its pool and River collectors here.
	GroupMetrics = "metrics"
	// GroupIntakeGuards collects turns.IntakeGuard values: the turns
	// service asks each of them before it lets a turn into a line (the
	// access-codes module contributes one).
	GroupIntakeGuards = "turns.intakeGuards"
	// GroupTurnFollowers collects turns.Follower values: records of other
	// modules that stand in the line as a turn and change with it, inside
	// the turn's unit of work (the appointments module contributes one).
	// The turns service takes them when it is built.
	GroupTurnFollowers = "turns.followers"
	// GroupTurnWatchers collects turns.Watcher values: they hear every
	// change of every turn inside its unit of work (the notifications
	// module contributes one). The turns service takes them when it is
	// built, so a watcher may not need the turns service itself
	// (docs/architecture.md, "Wiring without setters").
	GroupTurnWatchers = "turns.watchers"
	// GroupAppointmentWatchers collects appointments.Watcher values: they
	// hear every booking and lifecycle step of an appointment (the
	// notifications module contributes one, for the reminder).
	GroupAppointmentWatchers = "appointments.watchers"
	// GroupRetention collects RetentionTask values: each module's kind of
	// record that grows without bound and how long it is kept; the
	// retention job (modules/retention) prunes them all.
	GroupRetention = "retention.tasks"
	// NameHTTPMetrics names the fiber.Handler that measures every request
	// (modules/metrics provides it; the HTTP server uses it when present).
	NameHTTPMetrics = "http_metrics"
)

// InGroup is the fx tag that puts a provided value into group g.
func InGroup(g string) string { return `group:"` + g + `"` }

// Named is the fx tag that names a provided value n.
func Named(n string) string { return `name:"` + n + `"` }
