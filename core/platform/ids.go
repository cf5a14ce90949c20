package platform

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
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
	var rnd [10]byte
	_, _ = rand.Read(rnd[:])
	return newIDAt(prefix, time.Now(), rnd)
}

// NewRequestIDAt is a request's id ("req_" and NewID's 26 characters,
// in the same order as the process's other ids) for a request that
// started at now, the present. Its random bits come from the runtime's
// generator (math/rand/v2), not crypto/rand: a request id names nothing
// and guards nothing (a client may send its own), and crypto/rand's lock
// and generator, with the clock reading the caller has made already, were
// about 5 % of a memory-mode GET's handler CPU (issue 30).
func NewRequestIDAt(now time.Time) string {
	var rnd [10]byte
	binary.LittleEndian.PutUint64(rnd[:8], mrand.Uint64())
	binary.LittleEndian.PutUint16(rnd[8:], uint16(mrand.Uint32()))
	return newIDAt(PrefixRequest, now, rnd)
}

func newIDAt(prefix string, now time.Time, rnd [10]byte) string {
	// Spelled into one buffer: the ULID's string and the concatenation
	// were two allocations (of every request's id too, issue 16).
	var sb strings.Builder
	sb.Grow(len(prefix) + 1 + 26)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	out := base32Of(ulidAt(now, rnd))
	sb.Write(out[:])
	return sb.String()
}

// ulidAt returns the 128 bits of a new ULID at now, from 10 random bytes.
func ulidAt(now time.Time, rnd [10]byte) [16]byte {
	var b [16]byte
	ms := uint64(now.UnixMilli())
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
