package pin

import "testing"

func TestReactions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r     Reaction
		valid bool
		or    Reaction
	}{
		{"", true, Deny},
		{Warn, true, Warn},
		{Ask, true, Ask},
		{Deny, true, Deny},
		{Hide, true, Hide},
		{"block", false, "block"},
		{"ASK", false, "ASK"},
	}
	for _, tt := range tests {
		if got := tt.r.Valid(); got != tt.valid {
			t.Errorf("Reaction(%q).Valid() = %v, want %v", tt.r, got, tt.valid)
		}
		if got := tt.r.Or(Deny); got != tt.or {
			t.Errorf("Reaction(%q).Or(deny) = %q, want %q", tt.r, got, tt.or)
		}
	}
	if DefaultReaction != Ask {
		t.Errorf("DefaultReaction = %q, want ask", DefaultReaction)
	}
}
