package platform

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Prefixes of identifiers, one per kind of resource.
const (
	PrefixAccount     = "acc"
	PrefixAPIKey      = "key"
	PrefixEntity      = "ent"
	PrefixQueue       = "que"
	PrefixRun         = "run"
	PrefixStation     = "sta"
	PrefixTurn        = "turn"
	PrefixSlot        = "slot"
	PrefixAppointment = "apt"
	PrefixAccessCode  = "acd"
	PrefixLink        = "lnk"
	PrefixWebhook     = "whe"
	PrefixDelivery    = "dlv"
	PrefixEvent       = "evt"
	PrefixRequest     = "req"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

var idGen struct {
	sync.Mutex
	lastMS uint64
	seq    uint64
}

// NewID returns an opaque identifier "prefix_" + 26 base32 characters: 48
// bits of milliseconds, then a per-millisecond sequence and random bits. IDs
// made in one process are strictly increasing, so they sort by creation
// time; across processes they sort by millisecond.
func NewID(prefix string) string {
	return NewIDAt(prefix, time.Now())
}

// NewIDAt is NewID for a caller that has just read the clock (the HTTP
// layer's request id, from the request's start: a clock reading costs
// about 100 ns on the project's VM, issue 30). now must be the present:
// the id's order among the process's ids is the calls' order all the same.
func NewIDAt(prefix string, now time.Time) string {
	// Spelled into one buffer: the ULID's string and the concatenation
	// were two allocations (of every request's id too, issue 16).
	var sb strings.Builder
	sb.Grow(len(prefix) + 1 + 26)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	out := base32Of(ulidAt(now))
	sb.Write(out[:])
	return sb.String()
}

// ulidAt returns the 128 bits of a new ULID at now.
func ulidAt(now time.Time) [16]byte {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	var rnd [10]byte
	_, _ = rand.Read(rnd[:])
	idGen.Lock()
	if ms <= idGen.lastMS {
		ms = idGen.lastMS
		idGen.seq++
	} else {
		idGen.lastMS = ms
		idGen.seq = binary.BigEndian.Uint64(append([]byte{0, 0, 0, 0, 0, 0}, rnd[:2]...)) & 0x7fff
	}
	seq := idGen.seq
	idGen.Unlock()
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	// 32 bits of sequence keep same-millisecond IDs ordered; 48 random bits
	// keep them unguessable across processes.
	binary.BigEndian.PutUint32(b[6:10], uint32(seq))
	copy(b[10:], rnd[4:])
	return b
}

// base32Of spells 128 bits as 26 characters of 5 bits (the first carries
// 3 bits).
func base32Of(b [16]byte) (out [26]byte) {
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return out
}
