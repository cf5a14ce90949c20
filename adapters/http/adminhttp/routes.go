// Package adminhttp is the control panel's side of the API: accounts,
// plans and API keys under /admin/v1, behind the operator's bearer token.
package adminhttp

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/httpx"
	"github.com/qms-dev/qms/core/accounts"
	"github.com/qms-dev/qms/core/platform"
)

// Register mounts /admin/v1 on app, guarded by token; brake (nil: a
// brake with the default budget) limits failed authentications per client
// address.
func Register(app fiber.Router, svc *accounts.Service, token string, brake *Brake) {
	if brake == nil {
		brake = NewBrake(0, nil)
	}
	r := app.Group("/admin/v1", brake.guard(bearer(token)))

	r.Post("/accounts", func(c *fiber.Ctx) error {
		var in accounts.CreateAccountInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		a, err := svc.CreateAccount(c.UserContext(), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, a)
	})
	r.Get("/accounts/:accountId", func(c *fiber.Ctx) error {
		a, err := svc.GetAccount(c.UserContext(), c.Params("accountId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, a)
	})
	r.Put("/accounts/:accountId/plan", func(c *fiber.Ctx) error {
		var in struct {
			Plan accounts.Plan `json:"plan"`
		}
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		a, err := svc.SetPlan(c.UserContext(), strings.Clone(c.Params("accountId")), in.Plan)
		if err != nil {
			return err
		}
		return httpx.OK(c, a)
	})
	r.Post("/accounts/:accountId/api-keys", func(c *fiber.Ctx) error {
		var in accounts.CreateKeyInput
		if err := httpx.Decode(c, &in); err != nil {
			return err
		}
		// c.Params aliases fasthttp's request buffer, which the next request
		// on that buffer overwrites; the key keeps its account id (in memory
		// storage, the very string), so it must own a copy.
		k, value, err := svc.CreateKey(c.UserContext(), strings.Clone(c.Params("accountId")), in)
		if err != nil {
			return err
		}
		return httpx.Created(c, CreatedKey{APIKey: k, Key: value})
	})
	r.Get("/accounts/:accountId/api-keys", func(c *fiber.Ctx) error {
		keys, err := svc.ListKeys(c.UserContext(), c.Params("accountId"))
		if err != nil {
			return err
		}
		return httpx.OK(c, fiber.Map{"data": keys})
	})
	r.Post("/api-keys/:keyId/revoke", func(c *fiber.Ctx) error {
		if err := httpx.Decode(c, &struct{}{}); err != nil {
			return err
		}
		k, err := svc.RevokeKey(c.UserContext(), strings.Clone(c.Params("keyId")))
		if err != nil {
			return err
		}
		return httpx.OK(c, k)
	})
}

// CreatedKey is the one response that carries a key's value.
type CreatedKey struct {
	accounts.APIKey
	Key string `json:"key"`
}

// bearer checks "Authorization: Bearer <token>" in constant time: both
// sides are hashed first so not even the token's length leaks.
func bearer(token string) func(c *fiber.Ctx) error {
	want := sha256.Sum256([]byte(token))
	return func(c *fiber.Ctx) error {
		got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || token == "" || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			return platform.NewError(platform.KindUnauthorized, platform.CodeUnauthorized,
				"the admin API needs Authorization: Bearer <QMS_ADMIN_TOKEN>", map[string]any{})
		}
		return nil
	}
}
