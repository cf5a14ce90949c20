package queues

import (
	"bytes"
	"encoding/json"
)

// UnmarshalJSON accepts an option as a string or as an object, and rejects
// unknown members of the object form like every other body.
func (o *Option) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*o = Option{Label: &s, Bare: true}
		return nil
	}
	type plain Option
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*o = Option(p)
	o.Bare = false
	return nil
}

// optionObject is Option without its JSON methods: the object form.
type optionObject Option

// FromString sets a bare option (platform.StringShorthand).
func (o *Option) FromString(s string) { *o = Option{Label: &s, Bare: true} }

// ObjectTarget is where the object form decodes to (platform.StringShorthand).
func (o *Option) ObjectTarget() any { return (*optionObject)(o) }

// MarshalJSON returns a bare option as the string it was given.
func (o Option) MarshalJSON() ([]byte, error) {
	if o.Bare && o.Label != nil {
		return json.Marshal(*o.Label)
	}
	type plain Option
	return json.Marshal(plain(o))
}
