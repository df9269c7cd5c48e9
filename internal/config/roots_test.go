package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtraRootsAreTheDirectoriesAServerIsGiven(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, d := range []string{"cwd", "cwd/rel", "served", "other", "home/proj", "flag"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(base, "file.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(d string) string { return filepath.Join(base, d) }
	work := at("cwd")
	home := map[string]string{"HOME": at("home")}
	tests := []struct {
		name string
		srv  Server
		want []string
	}{
		{"an absolute directory argument", Server{Command: "x", Args: []string{"-y", "server-filesystem", at("served")}}, []string{at("served")}},
		{"two directory arguments, in order", Server{Command: "x", Args: []string{at("served"), at("other")}}, []string{at("served"), at("other")}},
		{"a relative directory argument, resolved against the cwd", Server{Command: "x", Cwd: at("cwd"), Args: []string{"rel"}}, []string{at("cwd/rel")}},
		{"a relative directory argument of a server without cwd, against where mcpwarden runs", Server{Command: "x", Args: []string{"rel"}}, []string{at("cwd/rel")}},
		{"a dot-dot argument", Server{Command: "x", Cwd: at("cwd/rel"), Args: []string{".."}}, []string{at("cwd")}},
		{"a directory given as the value of a flag", Server{Command: "x", Args: []string{"--root=" + at("flag")}}, []string{at("flag")}},
		{"a home directory argument, expanded as server-filesystem does", Server{Command: "x", Env: home, Args: []string{"~/proj"}}, []string{at("home/proj")}},
		{"path_root on a stdio server", Server{Command: "x", PathRoot: at("other")}, []string{at("other")}},
		{"the cwd itself is left out", Server{Command: "x", Cwd: at("served"), Args: []string{".", at("served"), at("served") + "/"}}, nil},
		{"repeats are left out", Server{Command: "x", Args: []string{at("served"), at("served") + "/.", "--dir=" + at("served")}}, []string{at("served")}},
		{"a file argument is not a root", Server{Command: "x", Args: []string{file}}, nil},
		{"a missing directory is not a root", Server{Command: "x", Args: []string{at("missing")}}, nil},
		{"a remote server has none", Server{URL: "https://x.test/mcp", PathRoot: at("other")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := &Config{Servers: map[string]Server{"fs": tt.srv}}
			if diff := cmp.Diff(tt.want, cfg.ExtraRoots("fs", work)); diff != "" {
				t.Errorf("ExtraRoots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesSpecCarriesExtraRoots(t *testing.T) {
	t.Parallel()
	served := t.TempDir()
	cfg, err := Parse([]byte("servers:\n  fs:\n    command: x\n    args: ["+served+"]\n"), ".yaml", "/etc/mcpwarden", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.RulesSpecIn("/work").Servers["fs"]
	if got.Root != "/work" || !cmp.Equal(got.ExtraRoots, []string{served}) {
		t.Errorf("servers.fs root %q, extra roots %q; want /work and [%s]", got.Root, got.ExtraRoots, served)
	}
}
