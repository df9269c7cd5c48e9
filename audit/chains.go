package audit

import (
	"errors"
	"fmt"
	"maps"
)

// A Chain is one hash chain to verify on its own: the files one Log wrote,
// oldest first (Files lists them for a rotated log). Name says which
// chain it is in reports, usually the path of its newest file.
type Chain struct {
	Name  string
	Files []string
}

// A ChainResult is what VerifyChains found in one chain: its summary and,
// if the chain is broken or cannot be read, the error (a *VerifyError for
// a bad line).
type ChainResult struct {
	Chain Chain
	VerifyResult
	Err error
}

// VerifyChains checks each chain on its own, as Verify does, with opts for
// every chain: several replicas write several logs, each with its own
// chain, and no line of one links to another. Every chain is verified,
// whatever the ones before it showed. The error joins the errors of the
// chains that failed, each naming its chain; a Prev in opts is refused
// with more than one chain, since it can be the start of one only.
func VerifyChains(opts VerifyOptions, chains ...Chain) ([]ChainResult, error) {
	if len(chains) == 0 {
		return nil, errors.New("verify: no audit files given")
	}
	if opts.Prev != "" && len(chains) > 1 {
		return nil, fmt.Errorf("verify: an expected prev_sha256 is the start of one chain, but %d chains were given", len(chains))
	}
	out := make([]ChainResult, len(chains))
	var errs []error
	for i, c := range chains {
		out[i].Chain = c
		out[i].VerifyResult, out[i].Err = VerifyWith(opts, c.Files...)
		if out[i].Err != nil {
			errs = append(errs, fmt.Errorf("chain %s: %w (%d lines verified before it)", c.Name, out[i].Err, out[i].Lines))
		}
	}
	return out, errors.Join(errs...)
}

// SharedReplicas returns the replica ids that events of more than one of
// results carry, each with the names of those chains, in the order given.
// Two chains of one replica id are two logs that cannot be told apart by
// it: two replicas configured with one id, or a replica whose old log was
// moved aside and a new one started.
func SharedReplicas(results []ChainResult) map[string][]string {
	byID := map[string][]string{}
	for _, r := range results {
		for _, id := range r.Replicas {
			byID[id] = append(byID[id], r.Chain.Name)
		}
	}
	maps.DeleteFunc(byID, func(_ string, names []string) bool { return len(names) < 2 })
	return byID
}
