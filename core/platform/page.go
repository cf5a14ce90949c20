package platform

// Paging bounds of spec section 8.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// PageRequest asks for at most Limit items after the item whose sort key is
// After (empty: from the start). Lists are ordered by ID, which sorts by
// creation time, so a walk never skips or repeats an item that existed when
// it began.
type PageRequest struct {
	Limit int
	After string
}

// Page is one page of a list. Next is the sort key to continue after, empty
// when there are no more items.
type Page[T any] struct {
	Items []T
	Next  string
}

// PageOf cuts items (fetched with Limit+1) into a page.
func PageOf[T any](items []T, limit int, key func(T) string) Page[T] {
	if len(items) > limit {
		items = items[:limit]
		return Page[T]{Items: items, Next: key(items[len(items)-1])}
	}
	return Page[T]{Items: items}
}
