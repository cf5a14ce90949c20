package turns

import "hash/maphash"

// lineTree is a run's waiting line as a persistent treap ordered by
// LineKey, each node counting the keys below it: inserting or removing a
// key copies only the O(log n) nodes on its path and shares the rest with
// the tree it came from, so a snapshot another reader holds never changes
// and a change of the line costs no copy of the whole line (issue 16: the
// line used to be cloned whole on every change). A nil *lineNode is the
// empty line.
type lineNode struct {
	key         LineKey
	prio        uint64
	size        int
	left, right *lineNode
}

var lineSeed = maphash.MakeSeed()

// linePrio is a key's treap priority: a hash, so the tree's shape depends
// only on its keys.
func linePrio(k LineKey) uint64 {
	var h maphash.Hash
	h.SetSeed(lineSeed)
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(k.Rank) >> (8 * i))
		b[8+i] = byte(uint64(k.Seq) >> (8 * i))
	}
	_, _ = h.Write(b[:])
	return h.Sum64()
}

func (n *lineNode) count() int {
	if n == nil {
		return 0
	}
	return n.size
}

// with returns a copy of n with the given children.
func (n *lineNode) with(left, right *lineNode) *lineNode {
	return &lineNode{key: n.key, prio: n.prio, left: left, right: right, size: 1 + left.count() + right.count()}
}

// split parts t into the keys before k and the keys from k on (orEqual
// false) or after k (orEqual true).
func (t *lineNode) split(k LineKey, orEqual bool) (*lineNode, *lineNode) {
	if t == nil {
		return nil, nil
	}
	before := t.key.Less(k) || (orEqual && !k.Less(t.key))
	if before {
		l, r := t.right.split(k, orEqual)
		return t.with(t.left, l), r
	}
	l, r := t.left.split(k, orEqual)
	return l, t.with(r, t.right)
}

// mergeLines joins a and b, every key of a before every key of b.
func mergeLines(a, b *lineNode) *lineNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio >= b.prio:
		return a.with(a.left, mergeLines(a.right, b))
	}
	return b.with(mergeLines(a, b.left), b.right)
}

// insert returns t with k; false when k is already in it.
func (t *lineNode) insert(k LineKey) (*lineNode, bool) {
	if _, found := t.rank(k); found {
		return nil, false
	}
	l, r := t.split(k, false)
	return mergeLines(mergeLines(l, &lineNode{key: k, prio: linePrio(k), size: 1}), r), true
}

// remove returns t without k; false when k is not in it.
func (t *lineNode) remove(k LineKey) (*lineNode, bool) {
	if _, found := t.rank(k); !found {
		return nil, false
	}
	l, rest := t.split(k, false)
	_, r := rest.split(k, true)
	return mergeLines(l, r), true
}

// rank returns how many keys of t come before k, and whether k is in t.
func (t *lineNode) rank(k LineKey) (int, bool) {
	n := 0
	for t != nil {
		switch {
		case k.Less(t.key):
			t = t.left
		case t.key.Less(k):
			n += t.left.count() + 1
			t = t.right
		default:
			return n + t.left.count(), true
		}
	}
	return n, false
}

// lineTreeOf builds the tree of keys, in line order, without copies.
func lineTreeOf(keys []LineKey) *lineNode {
	var t *lineNode
	for _, k := range keys {
		// Keys come sorted: each joins at the end.
		t = mergeLines(t, &lineNode{key: k, prio: linePrio(k), size: 1})
	}
	return t
}
