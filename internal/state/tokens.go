package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// IssueJSON keeps v, encoded as JSON, under token in t for ttl, as
// Tokens.IssueToken does (ErrExists, ErrFull).
func IssueJSON(ctx context.Context, t Tokens, token string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the value of a single-use token: %w", err)
	}
	return t.IssueToken(ctx, token, raw, ttl)
}

// ConsumeJSON takes the value of token out of t into v, as
// Tokens.ConsumeToken does. found is false, with no error, when the token
// is not there (used, expired or never issued) or holds what v cannot
// hold: no single-use value was issued by that name for this reader. err
// is set only when t cannot be read.
func ConsumeJSON(ctx context.Context, t Tokens, token string, v any) (found bool, err error) {
	raw, err := t.ConsumeToken(ctx, token)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return json.Unmarshal(raw, v) == nil, nil
}
