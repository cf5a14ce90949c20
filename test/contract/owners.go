package contract

import (
	"context"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

// Owners writes the rows other resources hang from (an account, its
// entities and queues) through one adapter set's repositories, so suites of
// repositories with foreign keys can run on Postgres as on memory.
type Owners struct {
	Accounts accounts.Repository
	Entities entities.Repository
	Queues   queues.Repository
}

// Owned is an account with one entity and two queues of that entity.
type Owned struct {
	AccountID string
	EntityID  string
	QueueID   string
	QueueID2  string
}

// Seed creates an account, an entity and two queues.
func (o Owners) Seed(t *testing.T) Owned {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	acc := accounts.Account{ID: platform.NewID(platform.PrefixAccount), Name: "Test", Plan: accounts.PlanPremium, CreatedAt: now, UpdatedAt: now}
	if err := o.Accounts.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	ent := entities.Entity{ID: platform.NewID(platform.PrefixEntity), AccountID: acc.ID, Name: "Branch", CreatedAt: now, UpdatedAt: now}
	if err := o.Entities.Create(ctx, ent); err != nil {
		t.Fatal(err)
	}
	out := Owned{AccountID: acc.ID, EntityID: ent.ID}
	for _, id := range []*string{&out.QueueID, &out.QueueID2} {
		q := queues.Queue{ID: platform.NewID(platform.PrefixQueue), AccountID: acc.ID, EntityID: ent.ID,
			Name: "Queue", Type: queues.TypeTurn, CreatedAt: now, UpdatedAt: now}
		if err := o.Queues.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		*id = q.ID
	}
	return out
}
