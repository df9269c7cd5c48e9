package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestKindText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind Kind
		want string
	}{
		{KindDecision, "decision"},
		{KindResult, "result"},
		{KindToolsChanged, "tools_changed"},
		{KindUpstream, "upstream"},
	}
	for _, tt := range tests {
		b, err := tt.kind.MarshalText()
		if err != nil || string(b) != tt.want || tt.kind.String() != tt.want {
			t.Errorf("%d: MarshalText = %q, %v; String = %q; want %q", tt.kind, b, err, tt.kind.String(), tt.want)
		}
		var got Kind
		if err := got.UnmarshalText(b); err != nil || got != tt.kind {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, got, err, tt.kind)
		}
	}
}

func TestInvalidKindsAreErrors(t *testing.T) {
	t.Parallel()
	if _, err := Kind(0).MarshalText(); err == nil {
		t.Error("MarshalText of the zero Kind succeeded")
	}
	if _, err := json.Marshal(Event{}); err == nil {
		t.Error("an Event without kind encoded")
	}
	var k Kind
	if err := k.UnmarshalText([]byte("Decision")); err == nil {
		t.Error("UnmarshalText accepted a wrong case")
	}
	if got := Kind(9).String(); got != "Kind(9)" {
		t.Errorf("String = %q", got)
	}
}

func TestNewIDSortsByTime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := NewID(t0), NewID(t0.Add(time.Millisecond))
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("id %q is not 32 hex digits", a)
	}
	if a >= b {
		t.Errorf("ids do not sort by time: %s >= %s", a, b)
	}
	if NewID(t0) == a {
		t.Error("two ids for the same millisecond collide")
	}
}
