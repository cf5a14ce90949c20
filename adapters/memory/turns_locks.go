package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/turns"
)

// The run locks and the one-call reads of turns.Repository (RunLocks,
// Views, DrawNumber). Memory units of work are serialised by the store's
// lock, so "locking" a run is reading it; each method is the separate
// reads the PostgreSQL adapter sends in one round trip, in the same order
// and with the same answers (the contract suite runs both).

// errNoQueues, errNoTurns: the store was built without the repository a
// read joins.
var (
	errNoQueues = errors.New("memory: no queues repository on the store (NewQueues)")
	errNoTurns  = errors.New("memory: no turns repository on the store (NewTurns)")
)

func (r *Turns) queues() (*Queues, error) {
	if r.s.queues == nil {
		return nil, errNoQueues
	}
	return r.s.queues, nil
}

// EnterRun lets every caller in at once: a memory intake waits for the
// store's lock, which holds nothing a waiter could keep from others.
func (r *Turns) EnterRun(context.Context, string) (func(), error) { return func() {}, nil }

// RunIntake runs fn in a unit of work of its own: memory has no group
// commit, and nothing to carry.
func (r *Turns) RunIntake(ctx context.Context, _ string, fn func(ctx context.Context, carry any) (any, error)) error {
	return r.s.Do(ctx, func(ctx context.Context) error {
		_, err := fn(ctx, nil)
		return err
	})
}

// LockRunWithQueue reads the run and its queue.
func (r *Turns) LockRunWithQueue(ctx context.Context, runID string) (queues.Run, queues.Queue, error) {
	qs, err := r.queues()
	if err != nil {
		return queues.Run{}, queues.Queue{}, err
	}
	run, err := qs.GetRunForUpdate(ctx, runID)
	if err != nil {
		return queues.Run{}, queues.Queue{}, err
	}
	q, err := qs.GetQueue(ctx, run.QueueID)
	return run, q, err
}

// LockRunOfTurn reads the turn's run and queue.
func (r *Turns) LockRunOfTurn(ctx context.Context, turnID string) (string, queues.Run, queues.Queue, error) {
	t, err := r.Get(ctx, turnID)
	if err != nil {
		return "", queues.Run{}, queues.Queue{}, err
	}
	run, q, err := r.LockRunWithQueue(ctx, t.RunID)
	return t.AccountID, run, q, err
}

// CachedQueueOfRun is always false: memory keeps no process cache of
// queues (a read costs no round trip), so an intake draws its number after
// the lock.
func (r *Turns) CachedQueueOfRun(string) (queues.Queue, bool) { return queues.Queue{}, false }

// LockRunForIntake reads the run and its queue, then the account's turn
// made with the key, then draws the number asked for a new turn of the
// account's run.
func (r *Turns) LockRunForIntake(ctx context.Context, in turns.IntakeLock) (turns.IntakeLocked, error) {
	var out turns.IntakeLocked
	out.Run, out.Queue, out.RunErr = r.LockRunWithQueue(ctx, in.RunID)
	if errors.Is(out.RunErr, errNoQueues) {
		return out, out.RunErr
	}
	if in.Key != nil {
		t, err := r.ByIdempotencyKey(ctx, in.AccountID, *in.Key)
		switch {
		case err == nil:
			out.Replay = &t
			return out, nil
		case !platform.IsCode(err, platform.CodeNotFound):
			return out, err
		}
	}
	if d := in.Draw; d != nil && out.RunErr == nil && out.Run.AccountID == in.AccountID {
		n, held, seq, err := r.DrawNumber(ctx, in.RunID, d.Period, d.Prefix, d.Padding, d.Since)
		if err != nil {
			return out, err
		}
		out.Drawn = &turns.DrawnNumber{Number: n, CodeInUse: held, Seq: seq}
	}
	return out, nil
}

// DrawNumber is NextNumber, CodeInUse of the code it makes, and NextSeq.
func (r *Turns) DrawNumber(ctx context.Context, runID, period, prefix string, padding int, since time.Time) (int, bool, int64, error) {
	n, err := r.NextNumber(ctx, runID, period)
	if err != nil {
		return 0, false, 0, err
	}
	held, err := r.CodeInUse(ctx, runID, prefix+fmt.Sprintf("%0*d", padding, n), since)
	if err != nil {
		return 0, false, 0, err
	}
	seq, err := r.NextSeq(ctx)
	return n, held, seq, err
}

// QueueForView reads the queue's stations and its latest service times.
func (r *Turns) QueueForView(ctx context.Context, queueID string) (sts []queues.Station, samples []float64, err error) {
	qs, err := r.queues()
	if err != nil {
		return nil, nil, err
	}
	r.s.read(ctx, func() {
		sts = qs.stationsOfQueue(queueID)
		samples = r.recentServiceSeconds(queueID, turns.ServiceSamples)
	})
	return sts, samples, nil
}
