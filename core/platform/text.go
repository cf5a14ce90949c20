package platform

import (
	"unicode"
	"unicode/utf8"
)

// TextKind says which characters a text value admits. Every string that
// enters qms (body members at any depth, map keys, query and path
// parameters) is checked against one kind: plain unless its field says
// otherwise (the struct tag `text:"free"` or `text:"name"`, read by the
// HTTP adapter's strict decoder).
type TextKind int

const (
	// TextPlain is the default: identifiers, codes, phones, keys, URLs,
	// dates, enum values, short values. No control character at all.
	TextPlain TextKind = iota
	// TextFree is free text (notes, instructions, descriptions, form
	// answers, JSON values): tab, line feed and carriage return are
	// allowed; other control characters are not.
	TextFree
	// TextName is a name or label shown to people: plain, and it must
	// hold a visible character (not only spaces or invisible ones) and
	// holds no bidirectional control (U+202A-U+202E, U+2066-U+2069) and
	// no invisible character (zero-width space, word joiner, BOM, ...),
	// which would let one name pass for another.
	TextName
)

// Rules of the VALIDATION_ERROR fields that text checks report.
const (
	RuleInvalidUTF8        = "invalid_utf8"
	RuleControlCharacter   = "control_character"
	RuleBidiControl        = "bidi_control"
	RuleInvisibleCharacter = "invisible_character"
	RuleNoVisibleCharacter = "no_visible_character"
)

// CheckText returns the rule s breaks as a text of kind k and a message
// for it, or two empty strings when s passes. The empty string passes:
// whether a value may be empty is the field's own length rule.
func CheckText(s string, k TextKind) (rule, message string) {
	if !utf8.ValidString(s) {
		return RuleInvalidUTF8, "must be valid UTF-8"
	}
	visible := false
	for _, r := range s {
		switch {
		case isControl(r):
			if k == TextFree && (r == '\t' || r == '\n' || r == '\r') {
				continue
			}
			if k == TextFree {
				return RuleControlCharacter, "must not contain control characters (U+0000-U+001F, U+007F-U+009F) other than tab, line feed and carriage return"
			}
			return RuleControlCharacter, "must not contain control characters (U+0000-U+001F, U+007F-U+009F)"
		case k != TextName:
		case isBidiControl(r):
			return RuleBidiControl, "must not contain bidirectional embedding, override or isolate characters (U+202A-U+202E, U+2066-U+2069)"
		case isInvisible(r):
			return RuleInvisibleCharacter, "must not contain invisible characters (zero-width space, word joiner, byte order mark, fillers)"
		case !visible && unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S):
			visible = true
		}
	}
	if k == TextName && !visible && s != "" {
		return RuleNoVisibleCharacter, "must contain a visible character (a letter, digit, punctuation or symbol)"
	}
	return "", ""
}

// Text checks s as a text of kind k, recording the failure at path.
func (v *Validator) Text(path, s string, k TextKind) bool {
	if rule, msg := CheckText(s, k); rule != "" {
		v.Fail(path, rule, "%s", msg)
		return false
	}
	return true
}

// isControl: C0, DEL and C1. PostgreSQL refuses U+0000 in text outright;
// the others break logs, terminals, CSV exports and the display board.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// isInvisible lists the characters that render as nothing and have no
// place in a name. The zero-width joiner and non-joiner (U+200C, U+200D)
// are not among them: scripts such as Persian and Devanagari and emoji
// sequences need them. They, the direction marks (U+200E, U+200F,
// U+061C) and spaces are allowed but do not count as visible.
func isInvisible(r rune) bool {
	switch r {
	case 0x200b, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff, 0x180e,
		0x115f, 0x1160, 0x3164, 0xffa0:
		return true
	}
	return false
}

// String names the kind as its struct tag does: plain, free, name.
func (k TextKind) String() string {
	switch k {
	case TextFree:
		return "free"
	case TextName:
		return "name"
	}
	return "plain"
}
