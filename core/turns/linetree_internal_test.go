package turns

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLineTreeMatchesASortedSlice: random inserts and removals on the
// persistent line give the ranks a sorted slice gives, and earlier
// versions of the tree stay as they were.
func TestLineTreeMatchesASortedSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var (
		keys []LineKey
		tree *lineNode
	)
	type version struct {
		keys []LineKey
		tree *lineNode
	}
	var kept []version
	for i := 0; i < 3000; i++ {
		k := LineKey{Rank: r.IntN(3), Seq: int64(r.IntN(500)) - 50}
		j, found := slices.BinarySearchFunc(keys, k, compareKeys)
		var ok bool
		if r.IntN(3) == 0 {
			var next *lineNode
			next, ok = tree.remove(k)
			if ok != found {
				t.Fatalf("remove %v: ok %v, in the line %v", k, ok, found)
			}
			if ok {
				keys = slices.Delete(slices.Clone(keys), j, j+1)
				tree = next
			}
		} else {
			var next *lineNode
			next, ok = tree.insert(k)
			if ok == found {
				t.Fatalf("insert %v: ok %v, in the line %v", k, ok, found)
			}
			if ok {
				keys = slices.Insert(slices.Clone(keys), j, k)
				tree = next
			}
		}
		if i%100 == 0 {
			kept = append(kept, version{keys, tree})
		}
	}
	for _, v := range append(kept, version{keys, tree}) {
		if v.tree.count() != len(v.keys) {
			t.Fatalf("size %d, want %d", v.tree.count(), len(v.keys))
		}
		for i, k := range v.keys {
			if n, found := v.tree.rank(k); !found || n != i {
				t.Fatalf("rank of %v = %d, %v; want %d", k, n, found, i)
			}
		}
	}
	if built := lineTreeOf(keys); built.count() != len(keys) {
		t.Fatalf("built size %d, want %d", built.count(), len(keys))
	}
}
