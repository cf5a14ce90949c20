package turns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/qms-dev/qms/core/platform"
)

// oldCreateInput is the create body as it was when accessCode was a field
// of this package (Extensions embedded): the hashes of turns stored then
// must still match a repeat of their create.
type oldCreateInput struct {
	PeopleCount    *int              `json:"peopleCount"`
	IdempotencyKey *string           `json:"idempotencyKey"`
	Phone          *string           `json:"phone"`
	NotifyWhatsapp *bool             `json:"notifyWhatsapp"`
	FormResponse   map[string]string `json:"formResponse"`
	oldExtensions
}

type oldExtensions struct {
	AccessCode *string `json:"accessCode,omitempty"`
}

func oldHash(in oldCreateInput, runID string) string {
	in.IdempotencyKey = nil
	if in.PeopleCount == nil {
		in.PeopleCount = platform.Ptr(1)
	}
	if in.NotifyWhatsapp == nil {
		in.NotifyWhatsapp = platform.Ptr(false)
	}
	if in.FormResponse == nil {
		in.FormResponse = map[string]string{}
	}
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(append([]byte(runID+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

func TestRequestHashKeepsItsBytesWithDeclaredMembers(t *testing.T) {
	members := []BodyMember{{Name: "accessCode", Zero: (*string)(nil)}}
	for _, code := range []*string{nil, platform.Ptr("VIP-1"), platform.Ptr(`<&> "q" é`)} {
		in := CreateInput{Phone: platform.Ptr("+15550100"), FormResponse: map[string]string{"b": "2", "a": "1"}}
		old := oldCreateInput{Phone: in.Phone, FormResponse: in.FormResponse, oldExtensions: oldExtensions{AccessCode: code}}
		if code != nil {
			in.Extensions = Extensions{"accessCode": code}
		}
		if got, want := in.requestHash("run_1", members), oldHash(old, "run_1"); got != want {
			t.Errorf("code %v: hash %s, was %s", code, got, want)
		}
	}
}
