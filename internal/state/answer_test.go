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

// FuzzAnswerFromSharedState reads an answer as another replica, a
// resolver or anyone with access to the shared state may have written
// it: it never reads as None, an error leaves Deny, and what it reads it
// writes back the same.
func FuzzAnswerFromSharedState(f *testing.F) {
	for _, s := range []string{"deny", "allow_once", "allow_session", "allow_session_folder", "deny_session", "none", "allow", "", "ALLOW_ONCE", "allow_session\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var a Answer
		if err := a.UnmarshalText([]byte(s)); err != nil {
			if a != Deny {
				t.Fatalf("UnmarshalText(%q) failed and left %v, want Deny", s, a)
			}
			return
		}
		if a == None {
			t.Fatalf("UnmarshalText(%q) read None", s)
		}
		if text, err := a.MarshalText(); err != nil || string(text) != s {
			t.Fatalf("UnmarshalText(%q) = %v, which writes back as %q, %v", s, a, text, err)
		}
	})
}
