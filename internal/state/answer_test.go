package state

import "testing"

func TestAnswerTextRoundTrips(t *testing.T) {
	t.Parallel()
	for _, want := range []Answer{Deny, AllowOnce, AllowSession, AllowFolder, DenySession} {
		text, err := want.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", want, err)
		}
		var got Answer
		if err := got.UnmarshalText(text); err != nil || got != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
}

func TestAnswerNoneAndUnknownNamesReadAsDeny(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
	}{
		{"none is nothing answered, never an answer read", "none"},
		{"an unknown name", "allow"},
		{"a name in another case", "ALLOW_ONCE"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AllowOnce
			if err := got.UnmarshalText([]byte(tt.text)); err == nil || got != Deny {
				t.Errorf("UnmarshalText(%q) = %v, %v; want Deny and an error", tt.text, got, err)
			}
		})
	}
}
