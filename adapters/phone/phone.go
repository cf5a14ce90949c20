// Package phone checks and normalises the phone numbers customers type:
// a number is accepted only when it is a real, dialable number of its
// country (github.com/nyaruka/phonenumbers, Google's libphonenumber
// metadata), and it is kept in E.164 ("+34600123456"), so one number is
// stored, compared and sent to alike however it was typed.
//
// It is an adapter, not a core: the numbering plans are data that change
// with the library, and the cores keep the v1 bounds of a turn's phone
// (8 to 20 characters) whatever a number looks like.
package phone

import (
	"errors"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Errors Normalize returns; each says what is wrong in words a form can
// show beside the field.
var (
	// ErrEmpty: nothing but spaces.
	ErrEmpty = errors.New("phone: no number")
	// ErrUnparsable: not a phone number at all (letters, too short, no
	// country when no default region is given).
	ErrUnparsable = errors.New("phone: not a phone number")
	// ErrInvalid: shaped like a number but no number of its country (a
	// digit too many or too few, a range no operator uses).
	ErrInvalid = errors.New("phone: not a valid number of its country")
	// ErrRegion: the default region is not a known ISO 3166 country code.
	ErrRegion = errors.New("phone: unknown default region")
)

// MaxInput bounds what is parsed: a typed number never needs more, and
// the parser's cost grows with its input.
const MaxInput = 40

// Normalize parses raw as typed by a customer and returns it in E.164.
// region is the ISO 3166-1 alpha-2 country ("ES", "us") a number without
// a "+" country code is read in; empty means the number must carry one.
func Normalize(raw, region string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", ErrEmpty
	}
	if len(raw) > MaxInput {
		return "", ErrUnparsable
	}
	region = strings.ToUpper(strings.TrimSpace(region))
	if region != "" && phonenumbers.GetCountryCodeForRegion(region) == 0 {
		return "", ErrRegion
	}
	if region == "" {
		region = "ZZ" // the library's "unknown region": a "+" is then required
	}
	n, err := phonenumbers.Parse(raw, region)
	if err != nil {
		return "", ErrUnparsable
	}
	if !phonenumbers.IsValidNumber(n) {
		return "", ErrInvalid
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// ValidRegion reports whether region is a country code Normalize knows.
func ValidRegion(region string) bool {
	return phonenumbers.GetCountryCodeForRegion(strings.ToUpper(region)) != 0
}

// RegionOfNumber returns the country of a number written with its "+"
// country code ("+34 91 123 45 67" -> "ES"), or "" when it has none or
// is not valid.
func RegionOfNumber(raw string) string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "+") || len(raw) > MaxInput {
		return ""
	}
	n, err := phonenumbers.Parse(raw, "ZZ")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return ""
	}
	return phonenumbers.GetRegionCodeForNumber(n)
}

// zoneRegions maps an IANA time zone to the one country whose example
// number the library places in it; built once, from the library's own
// metadata.
var zoneRegions = func() map[string]string {
	seen := map[string]map[string]bool{}
	for r := range phonenumbers.GetSupportedRegions() {
		n := phonenumbers.GetExampleNumber(r)
		if n == nil {
			continue
		}
		zones, err := phonenumbers.GetTimezonesForNumber(n)
		if err != nil {
			continue
		}
		for _, z := range zones {
			if seen[z] == nil {
				seen[z] = map[string]bool{}
			}
			seen[z][r] = true
		}
	}
	out := make(map[string]string, len(seen))
	for z, rs := range seen {
		if len(rs) != 1 {
			continue // shared by several countries: no guess
		}
		for r := range rs {
			out[z] = r
		}
	}
	return out
}()

// RegionForZone guesses the country of an IANA time zone
// ("Europe/Madrid" -> "ES"), or "" when the library's metadata does not
// tie the zone to exactly one country. It is a guess for a form's default
// region, never a rule.
func RegionForZone(zone string) string { return zoneRegions[zone] }

// Checker offers the package's functions as methods, for a core that
// declares the interface it needs (core/join.Phones).
type Checker struct{}

// Normalize is Normalize.
func (Checker) Normalize(raw, region string) (string, error) { return Normalize(raw, region) }

// ValidRegion is ValidRegion.
func (Checker) ValidRegion(region string) bool { return ValidRegion(region) }

// RegionOfNumber is RegionOfNumber.
func (Checker) RegionOfNumber(raw string) string { return RegionOfNumber(raw) }

// RegionForZone is RegionForZone.
func (Checker) RegionForZone(zone string) string { return RegionForZone(zone) }
