// Package riverjobs implements ports.JobRunner on River (riverpgxv5) over
// the postgres adapter's pool. A job scheduled inside a unit of work is
// inserted in that unit's transaction through postgres.DB.WithPgxTx, so it
// exists if and only if the change that scheduled it committed.
//
// River's kinds are static Go types; qms's are names registered at run
// time. One args type (jobArgs) whose Kind is a field value serves every
// kind, registered once per kind with river.AddWorkerArgs.
package riverjobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/qms-dev/qms/adapters/postgres"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

var (
	_ ports.JobRunner       = (*Runner)(nil)
	_ platform.JobScheduler = (*Runner)(nil)
)

// Defaults of Options.
const (
	// DefaultWorkers is 50 because most jobs wait on the network (webhook
	// receivers, up to 10 s each): River fetches at most one batch per
	// FetchCooldown, so the worker count caps throughput. At 10 workers the
	// 10,000-event webhook benchmark fell ~40 s behind; at 50 it kept up.
	DefaultWorkers = 50
	// DefaultFetchCooldown is the least time between two fetches of
	// available jobs (River's default is 100 ms).
	DefaultFetchCooldown = 25 * time.Millisecond
	// DefaultFetchPollInterval is River's default: inserted jobs wake the
	// queues by notification at once, the poll only catches what came due.
	DefaultFetchPollInterval = time.Second
	// DefaultJobTimeout bounds an attempt of a kind without a Timeout of
	// its own; every kind here is a few round trips to the database.
	DefaultJobTimeout  = 20 * time.Second
	DefaultMaxAttempts = 25
	DefaultStopTimeout = 10 * time.Second
	// DefaultRescueStuckJobsAfter is how long a job may stay running before
	// River's rescuer (on the elected leader, every 30 s) makes it retryable:
	// a job whose process died (kill -9) runs again within a minute
	// (20 s, plus up to 30 s to the rescuer's next pass, plus the first
	// retry's second) instead of River's default hour. Kinds with a longer
	// Timeout are rescued only once their timeout has passed too.
	DefaultRescueStuckJobsAfter = 20 * time.Second
)

// Options tune a Runner. Zero values take the defaults above.
type Options struct {
	// Workers is how many jobs of River's default queue this process runs
	// at once.
	Workers int
	// QueueWorkers sizes the queues named by kinds' Queue: how many of
	// their jobs this process runs at once, besides Workers. A queue not
	// listed gets DefaultWorkers.
	QueueWorkers map[string]int
	// FetchCooldown is the least time between two fetches of available
	// jobs by one queue; zero is DefaultFetchCooldown.
	FetchCooldown time.Duration
	// FetchPollInterval is how often a queue looks for jobs when no
	// insert notification woke it (scheduled jobs coming due, notifications
	// lost); zero is DefaultFetchPollInterval.
	FetchPollInterval time.Duration
	// JobTimeout bounds one attempt of a kind without its own Timeout.
	JobTimeout time.Duration
	// RescueStuckJobsAfter must be at least JobTimeout; zero takes the
	// default or JobTimeout, whichever is longer.
	RescueStuckJobsAfter time.Duration
	// MaxAttempts applies to kinds and jobs that set none.
	MaxAttempts int
	// StopTimeout is how long Stop lets running jobs finish before it
	// cancels their contexts.
	StopTimeout time.Duration
	// Logger receives River's logs; nil uses slog.Default().
	Logger *slog.Logger
	// WatchdogInterval is how often the watchdog (watchdog.go) looks at
	// River; zero is DefaultWatchdogInterval.
	WatchdogInterval time.Duration
	// StuckAfter is how long jobs may stay overdue with none worked before
	// the watchdog restarts River; zero is DefaultStuckAfter.
	StuckAfter time.Duration
	// OrphanCheckInterval is how often the process looks for jobs it
	// fetched and never received (orphans.go; jobs.orphan_check_interval);
	// zero is DefaultOrphanCheckInterval.
	OrphanCheckInterval time.Duration
	// OrphanAfter is how long such a job must have been running before it
	// is made available again (jobs.orphan_after); zero is
	// DefaultOrphanAfter.
	OrphanAfter time.Duration
}

// Runner schedules and runs jobs with River. Register every kind, then
// Schedule and Start in any order: the River client is built on first use
// and kinds registered after that are refused.
type Runner struct {
	db   *postgres.DB
	opts Options

	mu     sync.Mutex
	kinds  map[string]ports.JobKind
	client *river.Client[pgx.Tx]
	cancel context.CancelFunc // ends the context River runs on

	// lastWorked is when this process last began a job (unix nanos);
	// restarts counts the watchdog's restarts.
	lastWorked atomic.Int64
	restarts   atomic.Int64
	// stopping is set by Stop: the watchdog lets River stop then.
	stopping atomic.Bool

	// ledger is what this process works and lately finished; clientIDs
	// are its River clients' IDs (a restart makes a new client); orphans
	// counts the jobs made available again (orphans.go).
	ledger    *workLedger
	clientIDs []string
	orphans   atomic.Int64
}

// New returns a Runner on db's pool.
func New(db *postgres.DB, opts Options) *Runner {
	opts.Workers = cmp.Or(opts.Workers, DefaultWorkers)
	opts.FetchCooldown = cmp.Or(opts.FetchCooldown, DefaultFetchCooldown)
	opts.FetchPollInterval = cmp.Or(opts.FetchPollInterval, DefaultFetchPollInterval)
	opts.JobTimeout = cmp.Or(opts.JobTimeout, DefaultJobTimeout)
	// River requires the rescue delay to be at least the default timeout.
	opts.RescueStuckJobsAfter = cmp.Or(opts.RescueStuckJobsAfter, max(DefaultRescueStuckJobsAfter, opts.JobTimeout))
	opts.MaxAttempts = cmp.Or(opts.MaxAttempts, DefaultMaxAttempts)
	opts.StopTimeout = cmp.Or(opts.StopTimeout, DefaultStopTimeout)
	opts.WatchdogInterval = cmp.Or(opts.WatchdogInterval, DefaultWatchdogInterval)
	opts.StuckAfter = cmp.Or(opts.StuckAfter, DefaultStuckAfter)
	opts.OrphanCheckInterval = cmp.Or(opts.OrphanCheckInterval, DefaultOrphanCheckInterval)
	opts.OrphanAfter = cmp.Or(opts.OrphanAfter, DefaultOrphanAfter)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Runner{db: db, opts: opts, kinds: map[string]ports.JobKind{}, ledger: newWorkLedger()}
	r.lastWorked.Store(time.Now().UnixNano())
	return r
}

// Register adds a kind of job. It panics on a programming error: an empty
// name, a nil handler, a kind registered twice, or a registration after the
// runner has begun scheduling or running.
func (r *Runner) Register(kind ports.JobKind) {
	if err := ports.CheckJobKind(kind); err != nil {
		panic("riverjobs: " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.client != nil:
		panic(fmt.Sprintf("riverjobs: kind %q registered after the runner started scheduling or running", kind.Name))
	case r.kinds[kind.Name].Name != "":
		panic(fmt.Sprintf("riverjobs: kind %q registered twice", kind.Name))
	}
	r.kinds[kind.Name] = kind
}

// Client returns the River client, building it if needed, for what the
// port does not cover (cancelling or listing jobs, say).
func (r *Runner) Client() (*river.Client[pgx.Tx], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	workers := river.NewWorkers()
	backoffs := make(map[string]func(int) time.Duration, len(r.kinds))
	var periodic []*river.PeriodicJob
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.opts.Workers}}
	for name, kind := range r.kinds {
		river.AddWorkerArgs(workers, jobArgs{kind: name}, &worker{kind: kind, worked: &r.lastWorked, ledger: r.ledger})
		backoffs[name] = kind.Backoff
		if kind.Every > 0 {
			periodic = append(periodic, periodicJob(name, kind.Every, kind.Queue))
		}
		if q := kind.Queue; q != "" {
			queues[q] = river.QueueConfig{MaxWorkers: cmp.Or(r.opts.QueueWorkers[q], DefaultWorkers)}
		}
	}
	client, err := river.NewClient(riverpgxv5.New(r.db.Pool), &river.Config{
		Queues:               queues,
		FetchCooldown:        r.opts.FetchCooldown,
		FetchPollInterval:    r.opts.FetchPollInterval,
		Workers:              workers,
		PeriodicJobs:         periodic,
		JobTimeout:           r.opts.JobTimeout,
		RescueStuckJobsAfter: r.opts.RescueStuckJobsAfter,
		MaxAttempts:          r.opts.MaxAttempts,
		RetryPolicy:          retryPolicy{backoffs: backoffs},
		Middleware:           []rivertype.Middleware{&nearFutureAvailable{}},
		Logger:               r.opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("riverjobs: create client: %w", err)
	}
	r.client = client
	r.clientIDs = append(r.clientIDs, client.ID())
	return client, nil
}

// Schedule inserts job. Inside a unit of work of the runner's database the
// insert joins its transaction; outside one it commits on its own.
func (r *Runner) Schedule(ctx context.Context, job platform.Job) error {
	return r.ScheduleMany(ctx, []platform.Job{job})
}

// ScheduleMany inserts jobs in one statement (River's InsertManyTx), where
// Schedule would send one per job: an event's fan-out to ten webhook
// endpoints is one round trip instead of ten (issue 16). Inside a unit of
// work the insert joins its transaction; outside one it commits on its own.
func (r *Runner) ScheduleMany(ctx context.Context, jobs []platform.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, job := range jobs {
		p, err := r.insertParams(job)
		if err != nil {
			return err
		}
		params[i] = p
	}
	client, err := r.Client()
	if err != nil {
		return err
	}
	if r.db.InTx(ctx) {
		err = r.db.WithPgxTx(ctx, func(tx pgx.Tx) error {
			_, err := client.InsertManyTx(ctx, tx, params)
			return err
		})
	} else {
		_, err = client.InsertMany(ctx, params)
	}
	if err != nil {
		return fmt.Errorf("riverjobs: schedule %q: %w", jobs[0].Kind, err)
	}
	return nil
}

// insertParams are River's arguments and options of job.
func (r *Runner) insertParams(job platform.Job) (river.InsertManyParams, error) {
	r.mu.Lock()
	kind, ok := r.kinds[job.Kind]
	r.mu.Unlock()
	if !ok {
		return river.InsertManyParams{}, fmt.Errorf("riverjobs: schedule %q: kind not registered", job.Kind)
	}
	payload, err := json.Marshal(job.Args)
	if err != nil {
		return river.InsertManyParams{}, fmt.Errorf("riverjobs: schedule %q: marshal args: %w", job.Kind, err)
	}
	args := jobArgs{kind: job.Kind, UniqueKey: job.UniqueKey, Payload: payload}
	opts := &river.InsertOpts{
		MaxAttempts: cmp.Or(job.MaxAttempts, kind.MaxAttempts),
		ScheduledAt: job.RunAt,
		Queue:       kind.Queue, // empty: River's default queue
	}
	if job.UniqueKey != "" {
		// Only UniqueKey carries the unique struct tag, so the key is
		// (kind, UniqueKey). Finished jobs are left out of ByState: the
		// port keeps one *pending* job per key, and a new one may follow.
		opts.UniqueOpts = river.UniqueOpts{ByArgs: true, ByState: pendingStates}
	}
	return river.InsertManyParams{Args: args, InsertOpts: opts}, nil
}

// periodicJob enqueues kind every period on the elected leader, and once
// when a leader starts. The constant unique key keeps one pending job per
// kind: a period whose job has not finished is skipped.
func periodicJob(kind string, every time.Duration, queue string) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every), func() (river.JobArgs, *river.InsertOpts) {
		return jobArgs{kind: kind, UniqueKey: "periodic", Payload: json.RawMessage("{}")},
			&river.InsertOpts{Queue: queue, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pendingStates}}
	}, &river.PeriodicJobOpts{ID: kind, RunOnStart: true})
}

// pendingStates are the states in which a job blocks another with its
// unique key: every state before it finishes.
var pendingStates = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRetryable,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// Start begins working jobs. River runs on a context of its own: fx
// cancels the start context as soon as start-up is over, which would stop
// River at once. With no kind registered there is nothing to run (Schedule
// refuses unknown kinds), so Start does nothing: River refuses to start
// without workers.
func (r *Runner) Start(context.Context) error {
	r.mu.Lock()
	idle := len(r.kinds) == 0
	r.mu.Unlock()
	if idle {
		return nil
	}
	client, err := r.Client()
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	if err := client.Start(runCtx); err != nil {
		cancel()
		return fmt.Errorf("riverjobs: start: %w", err)
	}
	r.mu.Lock()
	r.cancel = cancel
	r.mu.Unlock()
	go r.watch(runCtx, client)
	return nil
}

// Stop lets running jobs finish for StopTimeout (or half of what is left
// of ctx, when that is shorter), then cancels their contexts and waits for
// them until ctx ends. Jobs cut short are retried later, by this process
// or another.
func (r *Runner) Stop(ctx context.Context) error {
	r.stopping.Store(true)
	r.mu.Lock()
	client, cancel := r.client, r.cancel
	r.cancel = nil
	r.mu.Unlock()
	if client == nil || cancel == nil {
		return nil // never started
	}
	defer cancel()

	soft := r.opts.StopTimeout
	if deadline, ok := ctx.Deadline(); ok {
		soft = min(soft, time.Until(deadline)/2)
	}
	softCtx, softCancel := context.WithTimeout(ctx, soft)
	defer softCancel()
	err := client.Stop(softCtx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("riverjobs: stop: %w", err)
	}
	if err := client.StopAndCancel(ctx); err != nil {
		return fmt.Errorf("riverjobs: stop: cancel running jobs: %w", err)
	}
	return nil
}

// jobArgs carries every kind's payload. Only UniqueKey is tagged unique,
// so River's by-args uniqueness is exactly (kind, UniqueKey).
type jobArgs struct {
	kind      string
	UniqueKey string          `json:"unique_key,omitempty" river:"unique"`
	Payload   json.RawMessage `json:"payload"`
}

// Kind is the registered kind name. River calls it on the instance given to
// AddWorkerArgs and on inserted args; args decoded for work come with the
// job row, whose Kind the worker reads instead.
func (a jobArgs) Kind() string { return a.kind }

// worker runs one kind's handler.
type worker struct {
	river.WorkerDefaults[jobArgs]
	kind   ports.JobKind
	worked *atomic.Int64 // Runner.lastWorked
	ledger *workLedger   // Runner.ledger
}

func (w *worker) Work(ctx context.Context, job *river.Job[jobArgs]) error {
	w.worked.Store(time.Now().UnixNano())
	w.ledger.begin(job.ID)
	defer w.ledger.end(job.ID)
	return w.kind.Handler(ctx, ports.JobContext{
		ID:          strconv.FormatInt(job.ID, 10),
		Kind:        job.Kind,
		Args:        job.Args.Payload,
		Attempt:     job.Attempt,
		MaxAttempts: job.MaxAttempts,
	})
}

// Timeout is the kind's own; zero falls back to Options.JobTimeout.
func (w *worker) Timeout(*river.Job[jobArgs]) time.Duration { return w.kind.Timeout }

// retryPolicy applies each kind's Backoff, and ports.DefaultBackoff to kinds
// without one. River asks it for failed jobs and for rescued ones.
type retryPolicy struct {
	backoffs map[string]func(attempt int) time.Duration
}

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	backoff := p.backoffs[job.Kind]
	if backoff == nil {
		backoff = ports.DefaultBackoff
	}
	return time.Now().Add(max(backoff(job.Attempt), 0))
}

// nearFutureAvailable inserts jobs due within River's scheduler interval
// (5 s) as available with their future scheduled_at, rather than as
// scheduled: producers only fetch jobs whose time has come, so such a job
// starts within a fetch poll (1 s) of its RunAt instead of at the
// scheduler's next pass. River's executor does the same for short retries.
type nearFutureAvailable struct {
	river.MiddlewareDefaults
}

const schedulerInterval = 5 * time.Second

func (*nearFutureAvailable) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range params {
		if p.State == rivertype.JobStateScheduled && p.ScheduledAt != nil && time.Until(*p.ScheduledAt) <= schedulerInterval {
			p.State = rivertype.JobStateAvailable
		}
	}
	return doInner(ctx)
}
