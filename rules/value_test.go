package rules

import (
	"encoding/json"
	"math"
	"testing"
)

func TestScalarText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
		ok   bool
	}{
		{name: "a string is itself", v: "1.0", want: "1.0", ok: true},
		{name: "an integral float64 has no fraction or exponent", v: float64(1), want: "1", ok: true},
		{name: "a fraction", v: 1.5, want: "1.5", ok: true},
		{name: "a negative number", v: -3.0, want: "-3", ok: true},
		{name: "negative zero reads zero", v: math.Copysign(0, -1), want: "0", ok: true},
		{name: "a large integral float64 has no exponent", v: float64(1 << 53), want: "9007199254740992", ok: true},
		{name: "1e20 has no exponent", v: 1e20, want: "100000000000000000000", ok: true},
		{name: "1e21 has an exponent, as in encoding/json", v: 1e21, want: "1e+21", ok: true},
		{name: "a tiny number has a clean exponent", v: 1e-7, want: "1e-7", ok: true},
		{name: "a float32", v: float32(0.1), want: "0.1", ok: true},
		{name: "a json.Number integer keeps its digits", v: json.Number("12345678901234567890"), want: "12345678901234567890", ok: true},
		{name: "a json.Number 1.0 reads 1", v: json.Number("1.0"), want: "1", ok: true},
		{name: "a json.Number exponent is expanded", v: json.Number("1E3"), want: "1000", ok: true},
		{name: "an int", v: 42, want: "42", ok: true},
		{name: "an int64", v: int64(-7), want: "-7", ok: true},
		{name: "an int8", v: int8(-3), want: "-3", ok: true},
		{name: "a uint16", v: uint16(500), want: "500", ok: true},
		{name: "an int", v: 42, want: "42", ok: true},
		{name: "a uint64", v: uint64(math.MaxUint64), want: "18446744073709551615", ok: true},
		{name: "true", v: true, want: "true", ok: true},
		{name: "false", v: false, want: "false", ok: true},
		{name: "null", v: nil, want: "null", ok: true},
		{name: "an object is not a scalar", v: map[string]any{}, ok: false},
		{name: "an array is not a scalar", v: []any{}, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, ok := scalarText(tt.v)
			if got != tt.want || ok != tt.ok {
				t.Errorf("scalarText(%#v) = %q, %v, want %q, %v", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestFloatTextMatchesEncodingJSON checks floatText against encoding/json.
func TestFloatTextMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, -1, 99, 100, 0.1, 1.5, 123456.789, 1e-6, 1e-7, 5e-324, 1e20, 1e21, 1.7976931348623157e308, -2.5e-10} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := floatText(f, 64); got != string(b) {
			t.Errorf("floatText(%v) = %q, want %q", f, got, b)
		}
	}
}
