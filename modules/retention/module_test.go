package retention_test

import (
	"testing"
	"time"

	"github.com/qms-dev/qms/configs/config"
	"github.com/qms-dev/qms/core/turns"
	"github.com/qms-dev/qms/modules/ticket"
)

// TestTicketLinksAreKeptAtLeastUntilTheyExpire: the ticket-link period is
// retention.ticket_links, but never shorter than tickets.expire_after (a
// live link must keep working) or the turns' reopen window (a reopened
// turn opens its links again).
func TestTicketLinksAreKeptAtLeastUntilTheyExpire(t *testing.T) {
	for _, c := range []struct{ retain, expire, want time.Duration }{
		{7 * 24 * time.Hour, 2 * time.Hour, 7 * 24 * time.Hour},
		{time.Hour, 2 * time.Hour, 2 * time.Hour},
		{time.Minute, time.Minute, turns.ReopenWindow},
	} {
		cfg := &config.Config{}
		cfg.Retention.TicketLinks, cfg.Tickets.ExpireAfter = c.retain, c.expire
		if keep := ticket.TicketLinksKeep(cfg); keep != c.want {
			t.Errorf("retain %v, expire %v: kept %v, want %v", c.retain, c.expire, keep, c.want)
		}
	}
}
