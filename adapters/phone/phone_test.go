package phone_test

import (
	"errors"
	"testing"

	"github.com/qms-dev/qms/adapters/phone"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		raw, region, want string
		err               error
	}{
		{"600 12 34 56", "ES", "+34600123456", nil},
		{"+34 600-12-34-56", "", "+34600123456", nil},
		{"+34600123456", "US", "+34600123456", nil}, // the + wins over the region
		{"(202) 555-0143", "us", "+12025550143", nil},
		{"11 91234-5678", "BR", "+5511912345678", nil},
		{"06 12 34 56 78", "FR", "+33612345678", nil},
		{"  ", "ES", "", phone.ErrEmpty},
		{"600 12 34 56", "", "", phone.ErrUnparsable}, // no country to read it in
		{"call me", "ES", "", phone.ErrUnparsable},
		{"600 12 34", "ES", "", phone.ErrInvalid}, // too short for Spain
		{"+34 900 000 000 000", "", "", phone.ErrInvalid},
		{"600123456", "XX", "", phone.ErrRegion},
		{"1234567890123456789012345678901234567890123", "ES", "", phone.ErrUnparsable},
	} {
		got, err := phone.Normalize(c.raw, c.region)
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("Normalize(%q, %q) = %q, %v; want %q, %v", c.raw, c.region, got, err, c.want, c.err)
		}
	}
}

func TestValidRegion(t *testing.T) {
	if !phone.ValidRegion("es") || !phone.ValidRegion("BR") || phone.ValidRegion("XX") || phone.ValidRegion("") {
		t.Fatal("ValidRegion")
	}
}

func TestRegionGuesses(t *testing.T) {
	for in, want := range map[string]string{"+34 91 123 45 67": "ES", "+1 202 555 0143": "US", "91 123 45 67": "", "+34 1": ""} {
		if got := phone.RegionOfNumber(in); got != want {
			t.Errorf("RegionOfNumber(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Europe/Madrid": "ES", "America/Sao_Paulo": "BR", "Europe/Lisbon": "PT", "UTC": "", "": ""} {
		if got := phone.RegionForZone(in); got != want {
			t.Errorf("RegionForZone(%q) = %q, want %q", in, got, want)
		}
	}
}
