package redis

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// encodeExpiring checks that what (an ask, a grant, a session) is given a
// positive time to live and encodes v, its value, as JSON.
func encodeExpiring(what string, ttl time.Duration, v any) ([]byte, error) {
	if err := state.CheckTTL(what, ttl); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", what, err)
	}
	return b, nil
}
