package postgres

import "time"

// utcPtr reads an optional timestamp in UTC, as the clock gives them; nil
// stays nil. It is the one helper every repository in this package uses.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
