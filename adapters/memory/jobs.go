package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/ports"
)

// Defaults of JobRunnerOptions, the same as the River runner's.
const (
	DefaultJobTimeout  = 30 * time.Second
	DefaultMaxAttempts = 25
	DefaultStopTimeout = 10 * time.Second
)

// JobRunnerOptions tune a JobRunner. Zero values take the defaults above.
type JobRunnerOptions struct {
	// JobTimeout bounds one attempt of a kind without its own Timeout.
	JobTimeout time.Duration
	// MaxAttempts applies to kinds and jobs that set none.
	MaxAttempts int
	// StopTimeout is how long Stop lets running jobs finish before it
	// cancels their contexts.
	StopTimeout time.Duration
	// Logger hears about failed attempts and dropped jobs; nil uses
	// slog.Default().
	Logger *slog.Logger
}

// JobRunner runs jobs in process, for memory mode, with the River runner's
// semantics: a job scheduled in a unit of work starts only once it commits
// (never if it rolls back), runs at its RunAt, retries with its kind's
// backoff until MaxAttempts, and is skipped while another job with the same
// kind and UniqueKey is pending (not yet finished).
//
// Unlike River, jobs live only in memory: those pending when the process
// stops are lost, and every due job runs at once on its own goroutine.
type JobRunner struct {
	store *Store
	clock platform.Clock
	opts  JobRunnerOptions

	mu      sync.Mutex
	state   runnerState
	kinds   map[string]ports.JobKind
	held    []*memJob               // scheduled before Start
	timers  map[*memJob]*time.Timer // waiting for their time
	pending map[string]*memJob      // by kind and UniqueKey
	nextID  int64
	ctx     context.Context // parent of every attempt's context
	cancel  context.CancelFunc
	running sync.WaitGroup
}

type runnerState int

const (
	runnerIdle runnerState = iota
	runnerStarted
	runnerStopped
)

// memJob is one scheduled job and its attempts so far.
type memJob struct {
	id          string
	kind        ports.JobKind
	args        json.RawMessage
	runAt       time.Time
	uniqueKey   string // kind and UniqueKey; empty when not unique
	maxAttempts int
	attempt     int
}

// NewJobRunner returns a runner whose units of work are store's. The clock
// says how far away a job's RunAt is; the wait itself is in real time.
func NewJobRunner(store *Store, clock platform.Clock, opts JobRunnerOptions) *JobRunner {
	opts.JobTimeout = cmp.Or(opts.JobTimeout, DefaultJobTimeout)
	opts.MaxAttempts = cmp.Or(opts.MaxAttempts, DefaultMaxAttempts)
	opts.StopTimeout = cmp.Or(opts.StopTimeout, DefaultStopTimeout)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &JobRunner{
		store:   store,
		clock:   clock,
		opts:    opts,
		kinds:   map[string]ports.JobKind{},
		timers:  map[*memJob]*time.Timer{},
		pending: map[string]*memJob{},
	}
}

// Register adds a kind of job. It panics on a programming error: an empty
// name, a nil handler, a kind registered twice, or a registration after
// Start.
func (r *JobRunner) Register(kind ports.JobKind) {
	if err := ports.CheckJobKind(kind); err != nil {
		panic("memory: " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.state != runnerIdle:
		panic(fmt.Sprintf("memory: kind %q registered after Start", kind.Name))
	case r.kinds[kind.Name].Name != "":
		panic(fmt.Sprintf("memory: kind %q registered twice", kind.Name))
	}
	r.kinds[kind.Name] = kind
}

// Schedule queues job once the unit of work in ctx commits, or at once
// outside one.
func (r *JobRunner) Schedule(ctx context.Context, job platform.Job) error {
	j, err := r.prepare(job)
	if err != nil {
		return err
	}
	r.store.AfterCommit(ctx, func() { r.enqueue(j) })
	return nil
}

// ScheduleMany queues jobs as Schedule does each: all or, when one cannot
// be (a kind not registered, args that do not marshal), none.
func (r *JobRunner) ScheduleMany(ctx context.Context, jobs []platform.Job) error {
	js := make([]*memJob, len(jobs))
	for i, job := range jobs {
		j, err := r.prepare(job)
		if err != nil {
			return err
		}
		js[i] = j
	}
	r.store.AfterCommit(ctx, func() {
		for _, j := range js {
			r.enqueue(j)
		}
	})
	return nil
}

// prepare checks job's kind and marshals its args.
func (r *JobRunner) prepare(job platform.Job) (*memJob, error) {
	r.mu.Lock()
	kind, ok := r.kinds[job.Kind]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("memory: schedule %q: kind not registered", job.Kind)
	}
	args, err := json.Marshal(job.Args)
	if err != nil {
		return nil, fmt.Errorf("memory: schedule %q: marshal args: %w", job.Kind, err)
	}
	j := &memJob{
		kind:        kind,
		args:        args,
		runAt:       job.RunAt,
		maxAttempts: cmp.Or(job.MaxAttempts, kind.MaxAttempts, r.opts.MaxAttempts),
	}
	if job.UniqueKey != "" {
		j.uniqueKey = job.Kind + "\x00" + job.UniqueKey
	}
	return j, nil
}

// enqueue makes a committed job pending, unless its unique key is taken.
func (r *JobRunner) enqueue(j *memJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == runnerStopped {
		r.opts.Logger.Warn("memory: job scheduled after Stop dropped", slog.String("kind", j.kind.Name))
		return
	}
	if j.uniqueKey != "" {
		if _, dup := r.pending[j.uniqueKey]; dup {
			return
		}
		r.pending[j.uniqueKey] = j
	}
	r.nextID++
	j.id = strconv.FormatInt(r.nextID, 10)
	if r.state == runnerIdle {
		r.held = append(r.held, j)
		return
	}
	r.armLocked(j, j.runAt)
}

// armLocked runs j at the given time (now when zero or past).
func (r *JobRunner) armLocked(j *memJob, at time.Time) {
	var delay time.Duration
	if !at.IsZero() {
		delay = max(at.Sub(r.clock.Now()), 0)
	}
	r.timers[j] = time.AfterFunc(delay, func() { r.run(j) })
}

// Start runs the jobs scheduled so far and those to come.
func (r *JobRunner) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.state {
	case runnerStarted:
		return nil
	case runnerStopped:
		return errors.New("memory: job runner restarted after Stop")
	}
	r.state = runnerStarted
	// Attempts outlive the start context, which fx cancels after start-up.
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for _, j := range r.held {
		r.armLocked(j, j.runAt)
	}
	r.held = nil
	for _, k := range r.kinds {
		if k.Every > 0 {
			go r.every(r.ctx, k)
		}
	}
	return nil
}

// every enqueues a job of the periodic kind now and then every period
// until Stop, one pending at a time (its unique key), as River's periodic
// jobs do.
func (r *JobRunner) every(ctx context.Context, kind ports.JobKind) {
	tick := time.NewTicker(kind.Every)
	defer tick.Stop()
	for {
		r.mu.Lock()
		stopped := r.state != runnerStarted
		r.mu.Unlock()
		if stopped {
			return
		}
		r.enqueue(&memJob{
			kind:        kind,
			args:        json.RawMessage("{}"),
			uniqueKey:   kind.Name + "\x00periodic",
			maxAttempts: cmp.Or(kind.MaxAttempts, r.opts.MaxAttempts),
		})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// run makes one attempt of j, then retries it after the kind's backoff or
// lets it go.
func (r *JobRunner) run(j *memJob) {
	r.mu.Lock()
	if _, armed := r.timers[j]; !armed || r.state != runnerStarted {
		r.mu.Unlock()
		return // Stop came first
	}
	delete(r.timers, j)
	r.running.Add(1)
	defer r.running.Done()
	j.attempt++
	ctx := r.ctx
	r.mu.Unlock()

	err := r.attempt(ctx, j)

	r.mu.Lock()
	defer r.mu.Unlock()
	log := r.opts.Logger.With(slog.String("kind", j.kind.Name), slog.String("job_id", j.id), slog.Int("attempt", j.attempt))
	switch {
	case err == nil:
	case j.attempt >= j.maxAttempts:
		log.Error("memory: job failed its last attempt; discarded", slog.String("error", err.Error()))
	case r.state != runnerStarted:
		log.Warn("memory: job failed during Stop; not retried", slog.String("error", err.Error()))
	default:
		log.Warn("memory: job attempt failed; will retry", slog.String("error", err.Error()))
		backoff := j.kind.Backoff
		if backoff == nil {
			backoff = ports.DefaultBackoff
		}
		r.armLocked(j, r.clock.Now().Add(max(backoff(j.attempt), 0)))
		return
	}
	if j.uniqueKey != "" {
		delete(r.pending, j.uniqueKey)
	}
}

// attempt calls the handler under the kind's timeout, a panic counting as
// a failure as it does with River.
func (r *JobRunner) attempt(ctx context.Context, j *memJob) (err error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(j.kind.Timeout, r.opts.JobTimeout))
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return j.kind.Handler(ctx, ports.JobContext{
		ID:          j.id,
		Kind:        j.kind.Name,
		Args:        j.args,
		Attempt:     j.attempt,
		MaxAttempts: j.maxAttempts,
	})
}

// Stop starts no more attempts and lets running ones finish for
// StopTimeout (or half of what is left of ctx, when that is shorter), then
// cancels their contexts and waits for them until ctx ends. Jobs not yet
// due are dropped.
func (r *JobRunner) Stop(ctx context.Context) error {
	r.mu.Lock()
	wasStarted := r.state == runnerStarted
	r.state = runnerStopped
	for j, t := range r.timers {
		t.Stop()
		delete(r.timers, j)
	}
	r.mu.Unlock()
	if !wasStarted {
		return nil
	}
	defer r.cancel()

	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	soft := r.opts.StopTimeout
	if deadline, ok := ctx.Deadline(); ok {
		soft = min(soft, time.Until(deadline)/2)
	}
	select {
	case <-done:
		return nil
	case <-time.After(soft):
	}
	r.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memory: stop: jobs still running: %w", ctx.Err())
	}
}
