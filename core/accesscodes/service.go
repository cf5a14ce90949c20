package accesscodes

import (
	"context"
	"fmt"

	"github.com/qms-dev/qms/core/platform"
)

// Codes raised by this module.
const (
	// CodeDuplicate: the code already exists in the account, or appears
	// twice in one bulk request (409).
	CodeDuplicate = "ACCESS_CODE_DUPLICATE"
	// CodeScopeNotFound: scopeId names no entity or queue of the account
	// (422), whether it names nothing or another account's.
	CodeScopeNotFound = "ACCESS_CODE_SCOPE_NOT_FOUND"

	// Refusals of a turn's code (422), see AccessCode.Usable.
	CodeRequired   = "ACCESS_CODE_REQUIRED"
	CodeUnknown    = "ACCESS_CODE_UNKNOWN"
	CodeDisabled   = "ACCESS_CODE_DISABLED"
	CodeOutOfScope = "ACCESS_CODE_OUT_OF_SCOPE"
	CodeExpired    = "ACCESS_CODE_EXPIRED"
	CodeExhausted  = "ACCESS_CODE_EXHAUSTED"
	// CodeInUse: the queue's carpool.oneActiveTurnPerCode is set and the code
	// already has an active turn there (409).
	CodeInUse = "ACCESS_CODE_IN_USE"
)

// Service is the access-code use cases.
type Service struct {
	repo     Repository
	entities Entities
	queues   Queues
	uow      platform.UnitOfWork
	clock    platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, ents Entities, qs Queues, uow platform.UnitOfWork, clock platform.Clock) *Service {
	return &Service{repo: repo, entities: ents, queues: qs, uow: uow, clock: clock}
}

// Create creates one code.
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (AccessCode, error) {
	if err := in.Validate(); err != nil {
		return AccessCode{}, err
	}
	var out AccessCode
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		if f, err := s.checkScope(ctx, accountID, &in, "", nil); err != nil || f != nil {
			if err != nil {
				return err
			}
			return f.err()
		}
		existing, err := s.repo.Existing(ctx, accountID, []string{*in.Code})
		if err != nil {
			return err
		}
		if len(existing) > 0 {
			return duplicate(*in.Code)
		}
		out = newCode(accountID, &in, s.clock.Now())
		return s.repo.Create(ctx, out)
	})
	return out, err
}

// ItemError is one refused item of a request, in the details of its error:
// its index (bulk only), the JSON path of the failing field, the item's own
// error code, a message and the value refused.
type ItemError struct {
	Index   *int   `json:"index,omitempty"`
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Value   string `json:"value,omitempty"`
	kind    platform.Kind
}

func (f *ItemError) err() error {
	return platform.NewError(f.kind, f.Code, f.Message, map[string]any{"field": f.Path, "value": f.Value})
}

// CreateBulk creates 1 to 1000 codes, all or nothing. Every item is checked
// before anything is written, so a refusal names every failing item by
// index: VALIDATION_ERROR (400) for field rules; otherwise, in details.items,
// each item refused by a business rule with its own code, the response
// carrying the most serious one: ACCESS_CODE_DUPLICATE (409, against the
// account's codes or an earlier item of the same request), else
// ACCESS_CODE_SCOPE_NOT_FOUND (422, scopeId names no entity or queue of the
// account).
func (s *Service) CreateBulk(ctx context.Context, accountID string, in BulkInput) ([]AccessCode, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out []AccessCode
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		values := make([]string, len(in.Codes))
		for i := range in.Codes {
			values[i] = *in.Codes[i].Code
		}
		existing, err := s.repo.Existing(ctx, accountID, values)
		if err != nil {
			return err
		}
		taken := make(map[string]bool, len(existing))
		for _, c := range existing {
			taken[c] = true
		}
		var failures []ItemError
		first := make(map[string]int, len(values))
		scopes := map[string]*ItemError{}
		for i, v := range values {
			path := platform.Index("codes", i)
			switch j, seen := first[v]; {
			case taken[v]:
				failures = append(failures, ItemError{Index: platform.Ptr(i), Path: path + ".code", Code: CodeDuplicate,
					Message: "the code already exists in this account", Value: v, kind: platform.KindConflict})
			case seen:
				failures = append(failures, ItemError{Index: platform.Ptr(i), Path: path + ".code", Code: CodeDuplicate,
					Message: fmt.Sprintf("the code repeats codes[%d] of this request", j), Value: v, kind: platform.KindConflict})
			default:
				first[v] = i
			}
			f, err := s.checkScope(ctx, accountID, &in.Codes[i], path, scopes)
			if err != nil {
				return err
			}
			if f != nil {
				f.Index = platform.Ptr(i)
				failures = append(failures, *f)
			}
		}
		if len(failures) > 0 {
			return bulkRefusal(failures)
		}
		now := s.clock.Now()
		out = make([]AccessCode, len(in.Codes))
		for i := range in.Codes {
			out[i] = newCode(accountID, &in.Codes[i], now)
		}
		return s.repo.CreateMany(ctx, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bulkRefusal is the error of a bulk request with failing items: the most
// serious kind among them gives the status and code, and details.items
// lists every failure with its own.
func bulkRefusal(failures []ItemError) error {
	rank := map[platform.Kind]int{platform.KindConflict: 0, platform.KindUnprocessable: 1}
	top := failures[0]
	for _, f := range failures[1:] {
		if rank[f.kind] < rank[top.kind] {
			top = f
		}
	}
	msg := fmt.Sprintf("%d of the codes were refused; nothing was created", len(failures))
	if len(failures) == 1 {
		msg = fmt.Sprintf("codes[%d] was refused (%s); nothing was created", *failures[0].Index, failures[0].Message)
	}
	return platform.NewError(top.kind, top.Code, msg, map[string]any{"items": failures})
}

// checkScope checks that scopeId names an entity or queue of the account,
// returning the item's failure or nil. seen, when not nil, remembers the
// outcome per scope so a bulk request looks each scope up once.
func (s *Service) checkScope(ctx context.Context, accountID string, in *CreateInput, path string, seen map[string]*ItemError) (*ItemError, error) {
	scope := platform.Deref(in.ScopeType, ScopeAccount)
	if scope == ScopeAccount {
		return nil, nil
	}
	key := scope + "\x00" + *in.ScopeID
	if f, ok := seen[key]; ok {
		if f == nil {
			return nil, nil
		}
		c := *f
		c.Path = platform.Path(path, "scopeId")
		return &c, nil
	}
	var err error
	if scope == ScopeEntity {
		_, err = s.entities.Get(ctx, accountID, *in.ScopeID)
	} else {
		_, err = s.queues.GetQueue(ctx, accountID, *in.ScopeID)
	}
	var f *ItemError
	switch {
	case err == nil:
	case platform.IsCode(err, platform.CodeNotFound), platform.IsCode(err, platform.CodeForbidden):
		// Another account's entity or queue is, to this account, no scope
		// at all: one answer for both, so nothing of the other account's
		// resources shows through (and a bulk refusal keeps one shape).
		f = &ItemError{Code: CodeScopeNotFound, kind: platform.KindUnprocessable,
			Message: fmt.Sprintf("scopeId does not name a %s of this account", scope)}
	default:
		return nil, err
	}
	if f != nil {
		f.Path, f.Value = platform.Path(path, "scopeId"), *in.ScopeID
	}
	if seen != nil {
		seen[key] = f
	}
	return f, nil
}

func duplicate(code string) error {
	return platform.Conflict(CodeDuplicate, "the code already exists in this account",
		map[string]any{"field": "code", "value": code})
}

// DuplicateError is the refusal of a code that already exists; repositories
// return it when the database's unique index catches a concurrent insert.
func DuplicateError(code string) error { return duplicate(code) }

// Get returns a code of the account: 404 when missing, 403 when another
// account's.
func (s *Service) Get(ctx context.Context, accountID, id string) (AccessCode, error) {
	c, err := s.repo.Get(ctx, id)
	if err != nil {
		return AccessCode{}, err
	}
	if c.AccountID != accountID {
		return AccessCode{}, platform.ForeignResource("access code")
	}
	return c, nil
}

// List pages through the account's codes, oldest first.
func (s *Service) List(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[AccessCode], error) {
	items, err := s.repo.List(ctx, accountID, page)
	if err != nil {
		return platform.Page[AccessCode]{}, err
	}
	return platform.PageOf(items, page.Limit, func(c AccessCode) string { return c.ID }), nil
}

// Disable stops a code from being used. Disabling a disabled code changes
// nothing. Turns that already took it keep it.
func (s *Service) Disable(ctx context.Context, accountID, id string) (AccessCode, error) {
	var out AccessCode
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		c, err := s.Get(ctx, accountID, id)
		if err != nil {
			return err
		}
		out = c
		if !c.Enabled {
			return nil
		}
		now := s.clock.Now()
		c.Enabled, c.DisabledAt, c.UpdatedAt = false, &now, now
		out = c
		return s.repo.Update(ctx, c)
	})
	return out, err
}

// Use counts one use of the account's code for a turn taken in the target
// queue and returns the code, or refuses it: ACCESS_CODE_UNKNOWN,
// _DISABLED, _OUT_OF_SCOPE, _EXPIRED or _EXHAUSTED (422). Called inside
// the unit of work that creates the turn, the use commits or rolls back
// with the turn; concurrent takers of a code's last use get exactly one
// success, the others ACCESS_CODE_EXHAUSTED.
func (s *Service) Use(ctx context.Context, accountID, code string, t Target) (AccessCode, error) {
	var out AccessCode
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		c, err := s.repo.GetByCode(ctx, accountID, code)
		if platform.IsCode(err, platform.CodeNotFound) {
			return platform.Unprocessable(CodeUnknown, "no access code of this account has that value",
				map[string]any{"field": "accessCode"})
		}
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if err := c.Usable(t, now); err != nil {
			return err
		}
		taken, ok, err := s.repo.TakeUse(ctx, c.ID, now)
		if err != nil {
			return err
		}
		if !ok {
			// Another transaction changed the code between the read and the
			// write (took its last use, or disabled it): say which.
			if fresh, err := s.repo.Get(ctx, c.ID); err == nil {
				if err := fresh.Usable(t, now); err != nil {
					return err
				}
			}
			return platform.Unprocessable(CodeExhausted, "the access code has no uses left",
				map[string]any{"field": "accessCode", "accessCodeId": c.ID})
		}
		out = taken
		return nil
	})
	return out, err
}
