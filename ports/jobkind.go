package ports

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"
)

// jobKindName is what River accepts as a kind
// (rivercommon.UserSpecifiedIDOrKindRE). Every runner enforces it, so a kind
// that works in memory mode works on River too.
var jobKindName = regexp.MustCompile(`\A[\w][\w\-\[\]<>\/.·:+]+\z`)

// CheckJobKind reports what is wrong with a kind a runner is asked to
// register: a name River would refuse, or no handler.
func CheckJobKind(kind JobKind) error {
	if !jobKindName.MatchString(kind.Name) || kind.Handler == nil {
		return fmt.Errorf("job kind %q needs a name matching %s and a handler", kind.Name, jobKindName)
	}
	return nil
}

// DefaultBackoff is the wait before the next attempt of a kind without its
// own Backoff: Backoff capped at an hour.
var DefaultBackoff = Backoff(time.Hour)

// Backoff is the one backoff of the job runners: the wait before the next
// attempt is about 2^(attempt-1) seconds (1 s, 2 s, 4 s, ...), at most
// limit, spread ±25% so failures that happened together do not retry
// together. A kind with a shorter limit sets Backoff: Backoff(limit).
func Backoff(limit time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := min(time.Second<<min(max(attempt-1, 0), 30), limit)
		return d*3/4 + rand.N(d/2)
	}
}
