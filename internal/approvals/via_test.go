package approvals

import (
	"encoding/json"
	"testing"
)

func TestViaIsWrittenAndReadByItsName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		via  Via
		json string
	}{
		{"the approvals page", ViaPage, `"approval_page"`},
		{"the CLI", ViaCLI, `"approval_cli"`},
		{"an external resolver", ViaResolver, `"resolver"`},
		{"no channel", ViaNone, `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := json.Marshal(tt.via)
			if err != nil || string(raw) != tt.json {
				t.Fatalf("json.Marshal(%v) = %s, %v; want %s", tt.via, raw, err, tt.json)
			}
			var got Via
			if err := json.Unmarshal(raw, &got); err != nil || got != tt.via {
				t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", raw, got, err, tt.via)
			}
		})
	}
	var got Via
	if err := json.Unmarshal([]byte(`"user_once"`), &got); err == nil || got != ViaNone {
		t.Errorf("an unknown channel read as %v, %v; want ViaNone and an error", got, err)
	}
}
