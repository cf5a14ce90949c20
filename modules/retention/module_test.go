package retention_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/modules/retention"
	"github.com/qms-dev/qms/test/testkit"
)

// TestTicketLinksAreKeptAtLeastUntilTheyExpire: the ticket-link period is
// retention.ticket_links, but never shorter than tickets.expire_after (a
// live link must keep working) or the turns' reopen window (a reopened
// turn opens its links again).
func TestTicketLinksAreKeptAtLeastUntilTheyExpire(t *testing.T) {
	set, _ := testkit.MemorySet(t, nil)
	for _, c := range []struct{ retain, expire, want time.Duration }{
		{7 * 24 * time.Hour, 2 * time.Hour, 7 * 24 * time.Hour},
		{time.Hour, 2 * time.Hour, 2 * time.Hour},
		{time.Minute, time.Minute, turns.ReopenWindow},
	} {
		cfg := &config.Config{}
		cfg.Retention.TicketLinks, cfg.Tickets.ExpireAfter = c.retain, c.expire
		var keep time.Duration
		for _, r := range retention.PolicyOf(cfg, set.Pruner).Rules {
			if r.Name == "ticket_links" {
				keep = r.Keep
			}
		}
		if keep != c.want {
			t.Errorf("retain %v, expire %v: kept %v, want %v", c.retain, c.expire, keep, c.want)
		}
	}
}
