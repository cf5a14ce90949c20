package turns

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/qms-dev/qms/core/queues"
)

// SecurityCode is a turn's pickup security code (the queue's
// arrivalBoard.showSecurity, docs/queues.md): four digits the customer's
// ticket page shows and the arrival board shows beside the turn, so whoever
// hands over an order or a child checks that the person collecting holds
// that turn's ticket. It is derived from the turn's id (never shown on the
// ticket page), so every turn has one, in every storage, with nothing
// stored: it is as private as the turn id, which only API keys and display
// boards see. Four digits are a check at a counter, not a password: one
// guess in 10,000.
func SecurityCode(turnID string) string {
	sum := sha256.Sum256([]byte("qms security code\x00" + turnID))
	return fmt.Sprintf("%04d", binary.BigEndian.Uint32(sum[:4])%10000)
}

// ShowsSecurity reports whether the queue's arrival board shows security
// codes.
func ShowsSecurity(q queues.Queue) bool {
	return q.ArrivalBoard != nil && q.ArrivalBoard.ShowSecurity != nil && *q.ArrivalBoard.ShowSecurity
}
