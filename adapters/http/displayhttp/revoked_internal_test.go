package displayhttp

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/core/display"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/stream"
)

func changedEntry(t *testing.T, ch display.TokenChanged) stream.Entry {
	t.Helper()
	e, err := platform.NewEvent("acc_1", ch, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return stream.Entry{Event: e}
}

// TestBoardJoiningAfterItsRevocationIsRefused: a board whose token was
// read just before its revocation, and which joins the run's group after
// the group handed the revocation out, finds it among the group's recent
// internal events and is refused; another token's revocation, or a
// change that is not one, refuses nothing.
func TestBoardJoiningAfterItsRevocationIsRefused(t *testing.T) {
	tok := display.Token{ID: "dsp_1"}
	cases := []struct {
		name     string
		internal []stream.Entry
		refused  bool
	}{
		{"none", nil, false},
		{"its options changed", []stream.Entry{changedEntry(t, display.TokenChanged{TokenID: "dsp_1"})}, false},
		{"another token revoked", []stream.Entry{changedEntry(t, display.TokenChanged{TokenID: "dsp_2", Revoked: true})}, false},
		{"revoked", []stream.Entry{
			changedEntry(t, display.TokenChanged{TokenID: "dsp_2", Revoked: true}),
			changedEntry(t, display.TokenChanged{TokenID: "dsp_1", Revoked: true}),
		}, true},
	}
	for _, c := range cases {
		first := &stream.Update[*runBoard]{View: &runBoard{}, Internal: c.internal}
		if got := revokedBefore(first, tok); got != c.refused {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.refused)
		}
	}
}
