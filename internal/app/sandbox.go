package app

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// sandbox is the sandbox of stdio server name, or nil when its sandbox is
// off. The server may write its workspace (the global and its own
// policy.workspace, and the directories it is given as arguments), its
// private HOME and TMPDIR under mcpwarden's state directory
// (sandbox/<server>/{home,tmp}, kept across restarts) and sandbox.write;
// read sandbox.read; read and execute the system directories and its own
// installation (added by upstream when it starts). None of these may
// reach mcpwarden's own files; Landlock cannot carve a file out of a
// granted directory, so upstream names each one that is reached in the
// log and the upstream audit event (sandbox.read and sandbox.write that
// would are refused at load).
func (s *Setup) sandbox(name string) *upstream.Sandbox {
	sb, on := s.Config.EffectiveSandbox(name)
	if !on {
		return nil
	}
	p := sb.Policy()
	base := s.Config.Dir
	if base == "" {
		base = s.WorkDir
	}
	ws := slices.Concat(s.Config.Policy.Workspace, s.Config.Servers[name].Policy.Workspace)
	for _, d := range ws {
		if !filepath.IsAbs(d) {
			d = filepath.Join(base, d)
		}
		p.Write = append(p.Write, filepath.Clean(d))
	}
	p.Write = append(p.Write, s.Config.ExtraRoots(name, s.WorkDir)...)
	if dir, err := config.StateDir(os.Getenv); err == nil {
		p.Home = filepath.Join(dir, "sandbox", name, "home")
		p.TmpDir = filepath.Join(dir, "sandbox", name, "tmp")
	}
	return &upstream.Sandbox{
		Launcher:       s.launcher,
		Policy:         p,
		Protected:      s.Config.OwnFiles(os.Getenv),
		ProtectedWrite: s.protected,
		ProtectedNames: clientconfig.ProjectFiles(),
	}
}
