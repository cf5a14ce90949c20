package httpx

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/adapters/http/signed"
	"github.com/qms-dev/qms/core/platform"
)

// cursorVersion leads every cursor, so the format can change without
// misreading cursors clients still hold.
const (
	cursorVersion = 1
	cursorMACLen  = 16 // 128 bits of HMAC-SHA256 are plenty against forgery
)

// Cursors makes and checks pagination cursors. A cursor is opaque to
// clients: base64url of (version, list name, account id, after key) with an
// HMAC-SHA256 tag, so a client can neither forge one, nor alter one, nor use
// another account's or another list's cursor. Every process of a deployment
// must share the secret.
type Cursors struct{ s signed.Signer }

// NewCursors returns cursors keyed by secret (from config; at least 16
// random bytes, 32 advised). A shorter secret is a configuration error and
// panics at start-up rather than making forgeable cursors.
func NewCursors(secret []byte) Cursors {
	s, err := signed.New(secret, cursorMACLen)
	if err != nil {
		panic("httpx: cursor secret must be at least 16 bytes")
	}
	return Cursors{s: s}
}

// Encode returns the cursor that continues list for account after the item
// with sort key after.
func (cs Cursors) Encode(list, account, after string) string {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen16+len(list)+len(account)+len(after)+cursorMACLen)
	b = append(b, cursorVersion)
	b = binary.AppendUvarint(b, uint64(len(list)))
	b = append(b, list...)
	b = binary.AppendUvarint(b, uint64(len(account)))
	b = append(b, account...)
	b = append(b, after...)
	return base64.RawURLEncoding.EncodeToString(cs.s.Seal(b))
}

// Decode returns the after key of a cursor made by Encode for the same list
// and account, or an INVALID_CURSOR error.
func (cs Cursors) Decode(cursor, list, account string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 1+cursorMACLen || b[0] != cursorVersion {
		return "", invalidCursor("the cursor is malformed")
	}
	payload, ok := cs.s.Open(b)
	if !ok {
		return "", invalidCursor("the cursor is malformed")
	}
	rest := payload[1:]
	gotList, rest, ok := readField(rest)
	if !ok {
		return "", invalidCursor("the cursor is malformed")
	}
	gotAccount, rest, ok := readField(rest)
	if !ok {
		return "", invalidCursor("the cursor is malformed")
	}
	// Authentic but for another list or caller: a client mixed cursors up.
	if string(gotList) != list || string(gotAccount) != account {
		return "", invalidCursor("the cursor does not belong to this list")
	}
	return string(rest), nil
}

func readField(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

func invalidCursor(msg string) error {
	return platform.NewError(platform.KindInvalid, platform.CodeInvalidCursor, msg,
		map[string]any{"parameter": "cursor"})
}

// ParsePage reads the limit and cursor query parameters of a list request.
// limit is 1-200, 50 when absent; anything else (out of range, not an
// integer, empty) is VALIDATION_ERROR on path "limit". cursor must have been
// issued by WritePage for the same list, the same account, the same path and
// the same filters (listScope); a tampered, forged, other account's or other
// list's or query's cursor is 400 INVALID_CURSOR.
func ParsePage(c *fiber.Ctx, cur Cursors, list string) (platform.PageRequest, error) {
	req := platform.PageRequest{Limit: platform.DefaultPageLimit}
	args := c.Context().QueryArgs()
	if args.Has("limit") {
		n, err := strconv.Atoi(string(args.Peek("limit")))
		if err != nil {
			return req, platform.InvalidField("limit", "type",
				"must be an integer from 1 to "+strconv.Itoa(platform.MaxPageLimit))
		}
		var v platform.Validator
		v.Range("limit", n, 1, platform.MaxPageLimit)
		if err := v.Err(); err != nil {
			return req, err
		}
		req.Limit = n
	}
	if args.Has("cursor") {
		after, err := cur.Decode(string(args.Peek("cursor")), listScope(c, list), PrincipalOf(c).AccountID)
		if err != nil {
			return req, err
		}
		req.After = after
	}
	return req, nil
}

// listScope is what a cursor is bound to besides the account: the list's
// name, the request's path (so every path parameter: run, queue, ...) and
// every query parameter but limit and cursor (every filter: entityId,
// status, ...), sorted. A cursor of one run, filter or list is then 400
// INVALID_CURSOR on another, instead of a page that silently skips rows;
// the limit may change from page to page.
func listScope(c *fiber.Ctx, list string) string {
	var params []string
	for k, v := range c.Context().QueryArgs().All() {
		if key := string(k); key != "limit" && key != "cursor" {
			params = append(params, key+"="+string(v))
		}
	}
	slices.Sort(params)
	return list + "\x00" + c.Path() + "\x00" + strings.Join(params, "&")
}

// pageBody is the list envelope of spec section 2.10.
type pageBody[T any] struct {
	Data       []T        `json:"data"`
	Pagination pagination `json:"pagination"`
}

type pagination struct {
	NextCursor *string `json:"nextCursor"`
	Limit      int     `json:"limit"`
}

// WritePage answers 200 with {"data":[...],"pagination":{"nextCursor",
// "limit"}}: data is always an array, nextCursor null on the last page and
// otherwise a cursor for the same list and account.
func WritePage[T any](c *fiber.Ctx, cur Cursors, list string, page platform.Page[T], limit int) error {
	body := pageBody[T]{Data: page.Items, Pagination: pagination{Limit: limit}}
	if body.Data == nil {
		body.Data = []T{}
	}
	if page.Next != "" {
		next := cur.Encode(listScope(c, list), PrincipalOf(c).AccountID, page.Next)
		body.Pagination.NextCursor = &next
	}
	return c.Status(fiber.StatusOK).JSON(body)
}

// OK answers 200 with v as JSON.
func OK(c *fiber.Ctx, v any) error { return c.Status(fiber.StatusOK).JSON(v) }

// Created answers 201 with v as JSON.
func Created(c *fiber.Ctx, v any) error { return c.Status(fiber.StatusCreated).JSON(v) }
