package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
)

// NotifyAccountsHarness is a fresh notify.AccountRepository, the messages
// repository beside it, the unit of work they join and the owners.
type NotifyAccountsHarness struct {
	Repo   notify.AccountRepository
	Msgs   notify.Repository
	UoW    platform.UnitOfWork
	Owners Owners
}

// RunNotifyAccounts runs the notify.AccountRepository contract: settings
// with their secrets read back as stored and forgotten; a turn's language
// kept, replaced and cleared by age; an account's latest message to a
// number is its own.
func RunNotifyAccounts(t *testing.T, newSet NewSet) {
	newHarness := func(t *testing.T) NotifyAccountsHarness {
		s := newSet(t)
		return NotifyAccountsHarness{Repo: s.NotifyAccounts, Msgs: s.Notify, UoW: s.UoW, Owners: OwnersOf(s)}
	}
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	do := func(t *testing.T, h NotifyAccountsHarness, f func(ctx context.Context) error) {
		t.Helper()
		if err := h.UoW.Do(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("settings and their secrets read back as stored, then forgotten", func(t *testing.T) {
		h := newHarness(t)
		o := h.Owners.Seed(t)
		if _, ok, err := h.Repo.AccountSettings(ctx, o.AccountID); ok || err != nil {
			t.Fatalf("before any: %v %v", ok, err)
		}
		s := notify.AccountSettings{AccountID: o.AccountID, SMS: platform.Ptr(notify.ProviderTwilio), WhatsApp: platform.Ptr(notify.ProviderCloud),
			Twilio: &notify.TwilioAccount{AccountSID: "AC0123", AuthToken: "tw-secret", From: "+15005550006"},
			Cloud:  &notify.CloudAccount{PhoneNumberID: "123", Token: "cl-token", AppSecret: "cl-secret", VerifyToken: "cl-verify"},
			Templates: []notify.Template{{Moment: notify.MomentCalled, Language: "es", SMSText: platform.Ptr("{code}"),
				WhatsAppTemplate: platform.Ptr("t_called"), WhatsAppLanguage: platform.Ptr("es_MX")}},
			QuietHours: &notify.QuietHours{Timezone: "Europe/Madrid", Start: "21:00", End: "08:00"}, SendRate: platform.Ptr(60), UpdatedAt: now}
		do(t, h, func(ctx context.Context) error { return h.Repo.PutAccountSettings(ctx, s) })
		got, ok, err := h.Repo.AccountSettings(ctx, o.AccountID)
		if err != nil || !ok || !reflect.DeepEqual(got, s) {
			t.Fatalf("read back %+v (%v %v), stored %+v", got, ok, err, s)
		}
		s.Cloud, s.WhatsApp, s.Twilio.AuthToken = nil, nil, "tw-secret-2"
		do(t, h, func(ctx context.Context) error { return h.Repo.PutAccountSettings(ctx, s) })
		if got, _, _ := h.Repo.AccountSettings(ctx, o.AccountID); !reflect.DeepEqual(got, s) {
			t.Fatalf("replaced: %+v, want %+v", got, s)
		}
		do(t, h, func(ctx context.Context) error { return h.Repo.DeleteAccountSettings(ctx, o.AccountID) })
		if _, ok, err := h.Repo.AccountSettings(ctx, o.AccountID); ok || err != nil {
			t.Fatalf("after delete: %v %v", ok, err)
		}
	})
	t.Run("a turn's language is kept, replaced, and cleared by age", func(t *testing.T) {
		h := newHarness(t)
		o := h.Owners.Seed(t)
		tu := h.Owners.Turn(t, o, o.QueueID)
		if l, err := h.Repo.TurnLanguage(ctx, tu.ID); l != "" || err != nil {
			t.Fatalf("before any: %q %v", l, err)
		}
		do(t, h, func(ctx context.Context) error { return h.Repo.PutTurnLanguage(ctx, o.AccountID, tu.ID, "es") })
		do(t, h, func(ctx context.Context) error { return h.Repo.PutTurnLanguage(ctx, o.AccountID, tu.ID, "pt") })
		if l, err := h.Repo.TurnLanguage(ctx, tu.ID); l != "pt" || err != nil {
			t.Fatalf("kept: %q %v", l, err)
		}
		var n int
		do(t, h, func(ctx context.Context) (err error) {
			n, err = h.Repo.ClearTurnLanguages(ctx, time.Now().Add(-time.Hour), 100)
			return err
		})
		if l, _ := h.Repo.TurnLanguage(ctx, tu.ID); n != 0 || l != "pt" {
			t.Fatalf("a recent language cleared: %d, %q", n, l)
		}
		do(t, h, func(ctx context.Context) (err error) {
			n, err = h.Repo.ClearTurnLanguages(ctx, time.Now().Add(time.Hour), 100)
			return err
		})
		if l, _ := h.Repo.TurnLanguage(ctx, tu.ID); n != 1 || l != "" {
			t.Fatalf("an old language kept: %d, %q", n, l)
		}
	})
	t.Run("an account's latest message to a number is its own", func(t *testing.T) {
		h := newHarness(t)
		a, b := h.Owners.Seed(t), h.Owners.Seed(t)
		ta, tb := h.Owners.Turn(t, a, a.QueueID), h.Owners.Turn(t, b, b.QueueID)
		ma := notifyMsg(now, a, ta.ID, ta.RunID, notify.MomentJoined, 1)
		mb := notifyMsg(now.Add(time.Minute), b, tb.ID, tb.RunID, notify.MomentJoined, 1)
		do(t, h, func(ctx context.Context) error {
			for _, m := range []notify.Message{ma, mb} {
				if _, err := h.Msgs.Insert(ctx, m); err != nil {
					return err
				}
			}
			return nil
		})
		if m, err := h.Repo.LatestToInAccount(ctx, a.AccountID, ma.To); err != nil || m.ID != ma.ID {
			t.Fatalf("A's latest: %+v %v", m, err)
		}
		if m, err := h.Msgs.LatestTo(ctx, ma.To); err != nil || m.ID != mb.ID {
			t.Fatalf("anyone's latest: %+v %v", m, err)
		}
		if _, err := h.Repo.LatestToInAccount(ctx, a.AccountID, "+34699999999"); !platform.IsCode(err, platform.CodeNotFound) {
			t.Fatalf("a number A never wrote to: %v", err)
		}
	})
}
