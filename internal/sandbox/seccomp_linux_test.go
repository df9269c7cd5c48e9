package sandbox

import "testing"

func TestFilterPolicyAssemblesForEveryNetworkAndTier(t *testing.T) {
	t.Parallel()
	for _, n := range []Network{NetworkNone, NetworkHost} {
		for _, tier := range []Tier{TierNamespaces, TierLandlock} {
			for _, unixOK := range []bool{false, true} {
				p := filterPolicy(Policy{Network: n, UnixSockets: unixOK}, tier)
				if _, err := p.Assemble(); err != nil {
					t.Errorf("network %s, tier %s, unix %v: %v", n, tier, unixOK, err)
				}
			}
		}
	}
}
