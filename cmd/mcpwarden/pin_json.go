package main

import (
	"encoding/json"
	"io"

	"github.com/mcpwarden/mcpwarden/internal/pin"
)

// pinReport is what pin --json prints: per server whether it was pinned
// and what changed, as one JSON object.
type pinReport struct {
	Lock    string      `json:"lock"`
	Updated bool        `json:"updated"`
	Changes int         `json:"changes"`
	Servers []pinServer `json:"servers"`
}

// pinServer is one server's comparison with the lock file.
type pinServer struct {
	Server string `json:"server"`
	// Pinned is false for a server the lock file does not know yet.
	Pinned  bool        `json:"pinned"`
	Tools   int         `json:"tools"`
	Changes []pinChange `json:"changes"`
	Error   string      `json:"error,omitempty"`
}

// pinChange is one tool's change.
type pinChange struct {
	Tool   string   `json:"tool"`
	Kind   string   `json:"kind"`
	Fields []string `json:"fields,omitempty"`
	Text   string   `json:"text"`
}

func newPinChanges(chs []pin.Change) []pinChange {
	out := make([]pinChange, 0, len(chs))
	for _, c := range chs {
		out = append(out, pinChange{Tool: c.Tool, Kind: c.Kind.String(), Fields: c.Fields, Text: c.String()})
	}
	return out
}

func (r *pinReport) write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
