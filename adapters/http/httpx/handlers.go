package httpx

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// ListFunc is a use case that pages through the caller's account's items.
type ListFunc[T any] func(ctx context.Context, accountID string, page platform.PageRequest) (platform.Page[T], error)

// List serves a paginated list: it reads limit and cursor, runs fetch for
// the caller's account and writes the list envelope. list names the list
// the cursors belong to.
func List[T any](cur Cursors, list string, fetch ListFunc[T]) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := ParsePage(c, cur, list)
		if err != nil {
			return err
		}
		p, err := fetch(c.UserContext(), PrincipalOf(c).AccountID, page)
		if err != nil {
			return err
		}
		return WritePage(c, cur, list, p, page.Limit)
	}
}

// Create serves a POST that makes a resource: it decodes the strict body,
// runs op for the caller's account and answers 201 with the result.
func Create[In, Out any](op func(ctx context.Context, accountID string, in In) (Out, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var in In
		if err := Decode(c, &in); err != nil {
			return err
		}
		out, err := op(c.UserContext(), PrincipalOf(c).AccountID, in)
		if err != nil {
			return err
		}
		return Created(c, out)
	}
}
