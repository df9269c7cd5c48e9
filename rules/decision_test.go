package rules

import (
	"strings"
	"testing"
)

func TestDecisionText(t *testing.T) {
	t.Parallel()
	for _, d := range []Decision{Deny, Ask, Allow} {
		b, err := d.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", d, err)
		}
		var got Decision
		if err := got.UnmarshalText(b); err != nil || got != d {
			t.Errorf("UnmarshalText(%q) = %v, %v, want %v", b, got, err, d)
		}
		if d.String() != string(b) {
			t.Errorf("String() = %q, MarshalText = %q", d.String(), b)
		}
	}
	var zero Decision
	if zero != Deny {
		t.Errorf("the zero Decision is %v, want deny", zero)
	}
	if _, err := Decision(9).MarshalText(); err == nil {
		t.Error("MarshalText accepted Decision(9)")
	}
	for _, bad := range []string{"", "Deny", "ALLOW", "yes", " ask"} {
		var d Decision
		err := d.UnmarshalText([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("UnmarshalText(%q) = %v, want an error naming the value", bad, err)
		}
	}
}
