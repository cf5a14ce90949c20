// Package entities is the branch domain (spec 2.7): the places an account
// runs its queues in.
package entities

import (
	"context"
	"net/mail"
	"net/url"
	"regexp"
	"time"

	"github.com/qms-dev/qms/core/location"
	"github.com/qms-dev/qms/core/platform"
)

// Entity is a branch.
type Entity struct {
	ID           string             `json:"id"`
	AccountID    string             `json:"-"`
	Name         string             `json:"name"`
	Description  *string            `json:"description"`
	WebsiteURL   *string            `json:"websiteUrl"`
	SupportEmail *string            `json:"supportEmail"`
	SupportPhone *string            `json:"supportPhone"`
	Location     *location.Location `json:"location"`
	CreatedAt    time.Time          `json:"createdAt"`
	UpdatedAt    time.Time          `json:"updatedAt"`
}

// CreateInput is the create body.
type CreateInput struct {
	Name         *string            `json:"name" text:"name"`
	Description  *string            `json:"description" text:"free"`
	WebsiteURL   *string            `json:"websiteUrl"`
	SupportEmail *string            `json:"supportEmail"`
	SupportPhone *string            `json:"supportPhone"`
	Location     *location.Location `json:"location"`
}

// UpdateInput is the PATCH body: every field optional; description,
// websiteUrl, supportEmail and supportPhone accept null to clear.
type UpdateInput struct {
	Name         platform.Patch[string]            `json:"name" text:"name"`
	Description  platform.Patch[string]            `json:"description" text:"free"`
	WebsiteURL   platform.Patch[string]            `json:"websiteUrl"`
	SupportEmail platform.Patch[string]            `json:"supportEmail"`
	SupportPhone platform.Patch[string]            `json:"supportPhone"`
	Location     platform.Patch[location.Location] `json:"location"`
}

var phoneRE = regexp.MustCompile(`^\+?[0-9][0-9 \-]{6,19}$`)

func validateName(v *platform.Validator, s string) { v.Len("name", s, 2, 120) }

func validateDescription(v *platform.Validator, s string) { v.Len("description", s, 0, 500) }

func validateWebsite(v *platform.Validator, s string) {
	v.Len("websiteUrl", s, 0, 300)
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		v.Fail("websiteUrl", "uri", "must be an absolute URI")
	}
}

func validateEmail(v *platform.Validator, s string) {
	v.Len("supportEmail", s, 0, 254)
	if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
		v.Fail("supportEmail", "email", "must be an email address")
	}
}

func validatePhone(v *platform.Validator, s string) {
	if !phoneRE.MatchString(s) {
		v.Fail("supportPhone", "pattern", "must be an optional +, a digit, then 6-19 digits, spaces or hyphens")
	}
}

// Validate checks the create body.
func (in CreateInput) Validate() error {
	var v platform.Validator
	if v.Required("name", in.Name != nil) {
		validateName(&v, *in.Name)
	}
	if in.Description != nil {
		validateDescription(&v, *in.Description)
	}
	if in.WebsiteURL != nil {
		validateWebsite(&v, *in.WebsiteURL)
	}
	if in.SupportEmail != nil {
		validateEmail(&v, *in.SupportEmail)
	}
	if in.SupportPhone != nil {
		validatePhone(&v, *in.SupportPhone)
	}
	if in.Location != nil {
		in.Location.Validate(&v, "location")
	}
	return v.Err()
}

// Validate checks the PATCH body. name and location cannot be cleared.
func (in UpdateInput) Validate() error {
	var v platform.Validator
	if in.Name.Set {
		if in.Name.Null {
			v.Fail("name", "not_null", "cannot be null")
		} else {
			validateName(&v, in.Name.Value)
		}
	}
	if in.Description.Set && !in.Description.Null {
		validateDescription(&v, in.Description.Value)
	}
	if in.WebsiteURL.Set && !in.WebsiteURL.Null {
		validateWebsite(&v, in.WebsiteURL.Value)
	}
	if in.SupportEmail.Set && !in.SupportEmail.Null {
		validateEmail(&v, in.SupportEmail.Value)
	}
	if in.SupportPhone.Set && !in.SupportPhone.Null {
		validatePhone(&v, in.SupportPhone.Value)
	}
	if in.Location.Set {
		if in.Location.Null {
			v.Fail("location", "not_null", "cannot be null")
		} else {
			in.Location.Value.Validate(&v, "location")
		}
	}
	return v.Err()
}

// Service is the entities use cases.
type Service struct {
	repo  Repository
	uow   platform.UnitOfWork
	clock platform.Clock
}

// NewService builds the service.
func NewService(repo Repository, uow platform.UnitOfWork, clock platform.Clock) *Service {
	return &Service{repo: repo, uow: uow, clock: clock}
}

// Create creates an entity of the account.
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (Entity, error) {
	if err := in.Validate(); err != nil {
		return Entity{}, err
	}
	now := s.clock.Now()
	e := Entity{
		ID: platform.NewID(platform.PrefixEntity), AccountID: accountID, Name: *in.Name,
		Description: in.Description, WebsiteURL: in.WebsiteURL, SupportEmail: in.SupportEmail,
		SupportPhone: in.SupportPhone, Location: in.Location, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.repo.Create(ctx, e); err != nil {
		return Entity{}, err
	}
	return e, nil
}

// Get returns an entity of the account: 404 when missing, 403 when another
// account's.
func (s *Service) Get(ctx context.Context, accountID, id string) (Entity, error) {
	e, err := s.repo.Get(ctx, id)
	if err != nil {
		return Entity{}, err
	}
	if e.AccountID != accountID {
		return Entity{}, platform.ForeignResource("entity")
	}
	return e, nil
}

// List pages through the account's entities.
func (s *Service) List(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[Entity], error) {
	items, err := s.repo.List(ctx, accountID, page)
	if err != nil {
		return platform.Page[Entity]{}, err
	}
	return platform.PageOf(items, page.Limit, func(e Entity) string { return e.ID }), nil
}

// Update applies a partial update.
func (s *Service) Update(ctx context.Context, accountID, id string, in UpdateInput) (Entity, error) {
	if err := in.Validate(); err != nil {
		return Entity{}, err
	}
	var out Entity
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		e, err := s.Get(ctx, accountID, id)
		if err != nil {
			return err
		}
		if in.Name.Set {
			e.Name = in.Name.Value
		}
		applyNullable(&e.Description, in.Description)
		applyNullable(&e.WebsiteURL, in.WebsiteURL)
		applyNullable(&e.SupportEmail, in.SupportEmail)
		applyNullable(&e.SupportPhone, in.SupportPhone)
		if in.Location.Set {
			l := in.Location.Value
			e.Location = &l
		}
		e.UpdatedAt = s.clock.Now()
		out = e
		return s.repo.Update(ctx, e)
	})
	return out, err
}

func applyNullable(dst **string, p platform.Patch[string]) {
	switch {
	case !p.Set:
	case p.Null:
		*dst = nil
	default:
		v := p.Value
		*dst = &v
	}
}

// Delete removes the entity and everything under it, irreversibly.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		if _, err := s.Get(ctx, accountID, id); err != nil {
			return err
		}
		return s.repo.Delete(ctx, id)
	})
}
