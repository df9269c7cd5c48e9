package argschema

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// A typeSet is a set of JSON Schema types. typeInteger is a number with an
// integral value; a set with typeNumber accepts every number.
type typeSet uint8

const (
	typeObject typeSet = 1 << iota
	typeArray
	typeString
	typeInteger
	typeNumber
	typeBoolean
	typeNull

	anyType = typeObject | typeArray | typeString | typeInteger | typeNumber | typeBoolean | typeNull
)

// typeNames are the JSON Schema names of the types, in the order messages
// list them, with the article a message gives each and the advice for
// sending a value of that type.
var typeNames = [...]struct {
	t       typeSet
	name    string
	article string
	advice  string
}{
	{typeObject, "object", "an object", "send a JSON object"},
	{typeArray, "array", "an array", "send a JSON array"},
	{typeString, "string", "a string", "send a JSON string"},
	{typeInteger, "integer", "an integer", "send a JSON number with no fraction"},
	{typeNumber, "number", "a number", "send a JSON number"},
	{typeBoolean, "boolean", "a boolean", "send true or false"},
	{typeNull, "null", "null", "send null"},
}

func typeNamed(name string) (typeSet, error) {
	for _, n := range typeNames {
		if n.name == name {
			return n.t, nil
		}
	}
	return 0, fmt.Errorf("%w %q", errUnknownType, name)
}

// typeOf returns the type of v, a value as jsonargs decodes it (json.Number
// for numbers; float64 and int are read too): one bit, typeInteger for a
// number with an integral value.
func typeOf(v any) typeSet {
	switch v := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case json.Number:
		if integral(string(v)) {
			return typeInteger
		}
		return typeNumber
	case float64:
		if v == math.Trunc(v) {
			return typeInteger
		}
		return typeNumber
	case int, int64:
		return typeInteger
	case []any:
		return typeArray
	case map[string]any:
		return typeObject
	default:
		return 0
	}
}

// accepts reports whether a value of type got (one bit) is of a type in t.
func (t typeSet) accepts(got typeSet) bool {
	if got == typeInteger && t&typeNumber != 0 {
		return true
	}
	return t&got != 0
}

// describe is how a message names t: "an array", "a string or null".
func (t typeSet) describe() string {
	return t.list(func(i int) string { return typeNames[i].article }, " or ", "no value at all")
}

// advice is what a message tells the sender to write instead.
func (t typeSet) advice() string {
	return t.list(func(i int) string { return typeNames[i].advice }, ", or ", "leave it out")
}

// list joins with sep the text of each type in t (typeNames[i] by index),
// an integer within a number named once as the number; none when t is
// empty.
func (t typeSet) list(text func(i int) string, sep, none string) string {
	if t&typeNumber != 0 {
		t &^= typeInteger
	}
	var parts []string
	for i, n := range typeNames {
		if t&n.t != 0 {
			parts = append(parts, text(i))
		}
	}
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, sep)
}

// integral reports whether the JSON number text s has an integral value,
// exactly (1.0 and 1e2 do; 1.5 and 1e-1 do not), whatever its size.
func integral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e := s[i+1:]
		neg := strings.HasPrefix(e, "-")
		e = strings.TrimLeft(e, "+-")
		for _, d := range e {
			if d < '0' || d > '9' {
				return false
			}
			if exp < 1<<20 {
				exp = exp*10 + int(d-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := len(intPart) + exp // the decimal point, counted in digits of intPart+frac
	all := len(intPart) + len(frac)
	for i := max(digits, 0); i < all; i++ {
		var d byte
		if i < len(intPart) {
			d = intPart[i]
		} else {
			d = frac[i-len(intPart)]
		}
		if d != '0' {
			return false
		}
	}
	return true
}
