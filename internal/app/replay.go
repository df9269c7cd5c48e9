package app

import (
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/policydiff"
	"github.com/mcpwarden/mcpwarden/internal/suggest"
	"github.com/mcpwarden/mcpwarden/rules"
)

// verdict is Decide's verdict on call, not over any limit: how policy
// diff and policy suggest decide a recorded request.
func (s *Setup) verdict(call rules.Call) rules.Verdict {
	return s.Decide(call, false).Verdict
}

// Replayed is s as a reload's warning and policy diff replay recorded
// requests under it: decided as the proxy would (Decide), not over any
// limit, with its flow labels.
func (s *Setup) Replayed() policydiff.Policy {
	return policydiff.Policy{Decide: s.verdict, Labels: s.Policy.Labels}
}

// Suggesting is s as policy suggest sees it: its rules and servers,
// deciding as Replayed does, and deciding again with the rules it
// suggests added (WithAllow).
func (s *Setup) Suggesting() suggest.Policy {
	return suggest.Policy{
		Rules:   s.Policy,
		Servers: s.Config.ServerNames(),
		Decide:  s.verdict,
		With: func(allow []string) (suggest.Decider, error) {
			next, err := s.WithAllow(allow)
			if err != nil {
				return nil, err
			}
			return next.verdict, nil
		},
	}
}

// WithAllow is s set up again, in the same working directory, with allow
// added to its global policy's allow list; s is not changed.
func (s *Setup) WithAllow(allow []string) (*Setup, error) {
	cfg := *s.Config
	cfg.Policy.Allow = append(slices.Clone(cfg.Policy.Allow), allow...)
	return NewSetup(&cfg, s.WorkDir)
}
