package upstream

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The stash and the HTTP answer are matched on idText, so it must be
// exactly the text json.Marshal writes, which is what the upstream echoes.
func TestIDTextIsWhatJSONMarshalWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   any
	}{
		{"a small integer", int64(7)},
		{"zero", int64(0)},
		{"a negative integer", int64(-42)},
		{"the largest integer", int64(math.MaxInt64)},
		{"the smallest integer", int64(math.MinInt64)},
		{"a plain string", "req-1"},
		{"a string with characters to escape", "a\"b<c>\u2028"},
		{"an int", 12},
		{"a float", 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := mcp.NewRequestId(tt.id)
			want, err := json.Marshal(id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := idText(id)
			if err != nil || got != string(want) {
				t.Errorf("idText(%v) = %q, %v; want %q", tt.id, got, err, want)
			}
		})
	}
}
