package config

import "testing"

func TestIsolationOfAStdioServerLoads(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("servers:\n  fs: { command: x, isolation: per_principal, isolation_idle_timeout: 2m, isolation_max: 3 }\n"), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := cfg.Servers["fs"]
	if fs.Isolation != IsolationPerPrincipal || fs.IsolationIdleTimeout.Minutes() != 2 || fs.IsolationMax != 3 {
		t.Errorf("fs = isolation %q, idle %s, max %d; want per_principal, 2m, 3", fs.Isolation, fs.IsolationIdleTimeout, fs.IsolationMax)
	}
}
