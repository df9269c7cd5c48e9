package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ownWorld is a world whose workspace holds mcpwarden's own files, as
// when the config is kept in the project a filesystem server serves: the
// config, and a state directory with a token store and the server's
// private HOME in it.
func ownWorld(t *testing.T, m mode) (world, Policy) {
	t.Helper()
	w := newWorld(t)
	state := w.work + "/.mcpwarden"
	for path, text := range map[string]string{
		w.work + "/mcpwarden.yaml": "servers: {}\n",
		state + "/tokens.json":     "{\"github\":\"encrypted\"}\n",
		state + "/home/.keep":      "",
		state + "/home/notes.txt":  "the server's own\n",
		state + "/tmp/.keep":       "",
		w.work + "/src/main.go":    "package main\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	filepath.Walk(w.work, func(path string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(path, env.uid, env.gid)
		}
		return nil
	})
	p := w.policy(m)
	p.Home, p.TmpDir = state+"/home", state+"/tmp"
	p.Hide = []string{w.work + "/mcpwarden.yaml", state}
	return w, p
}

// checkOwnFiles runs try unsandboxed (it must escape), in tier namespaces
// (it must not), and in tier landlock, which cannot hide a file inside a
// grant: there the server must not start when the sandbox is required,
// and the report must name the file, and with require: false it starts
// and is reported as missing the mask.
func checkOwnFiles(t *testing.T, tool, a, b string) {
	t.Helper()
	for _, m := range []mode{plain, nsTier} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			w, p := ownWorld(t, m)
			got := start(t, w, m, sessionOpts{policy: &p}).call(tool, strings.ReplaceAll(a, "WORK", w.work), strings.ReplaceAll(b, "WORK", w.work))
			escaped := strings.HasPrefix(got, "ESCAPED")
			if m == plain && !escaped {
				t.Fatalf("unsandboxed, the attempt failed, so it proves nothing: %s", got)
			}
			if m != plain && escaped {
				t.Fatalf("in tier %s the server escaped: %s", m.name, got)
			}
			t.Logf("%s: %s", m.name, got)
		})
	}
	t.Run("landlock refuses", func(t *testing.T) {
		t.Parallel()
		w, p := ownWorld(t, llTier)
		s := start(t, w, llTier, sessionOpts{policy: &p, noInit: true})
		rep, ok := s.report()
		if !ok {
			t.Fatalf("no report; warden stderr: %s", s.stderr)
		}
		if rep.Started || !strings.Contains(rep.Error, "mcpwarden.yaml") || !strings.Contains(rep.Error, "require: false") {
			t.Fatalf("report = %+v, want the server refused, naming the file and what to do", rep)
		}
	})
	t.Run("landlock best effort reports it", func(t *testing.T) {
		t.Parallel()
		w, p := ownWorld(t, llTier)
		p.BestEffort = true
		s := start(t, w, llTier, sessionOpts{policy: &p})
		rep, ok := s.report()
		if !ok || !rep.Started || rep.Has(ConfineMaskOwnFiles) || len(rep.Missing) == 0 || rep.Missing[0].Confinement != ConfineMaskOwnFiles {
			t.Fatalf("report = %+v, want started with %s missing", rep, ConfineMaskOwnFiles)
		}
	})
}

func TestSandboxStopsReadingConfigKeptInWorkspace(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "read_file", "WORK/mcpwarden.yaml", "")
}

func TestSandboxStopsRewritingConfigKeptInWorkspace(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "append_file", "WORK/mcpwarden.yaml", "")
}

// The state directory in the workspace is hidden whole, though the
// server's own HOME lies inside it.
func TestSandboxStopsReadingTokenStoreBesideItsHomeInWorkspace(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "read_file", "WORK/.mcpwarden/tokens.json", "")
}

func TestSandboxStopsRenamingMaskedConfigAway(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "rename_out", "WORK/src", "WORK/mcpwarden.yaml")
}

func TestSandboxStopsReadingMaskedConfigThroughSymlink(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "symlink_read", "WORK/src", "WORK/mcpwarden.yaml")
}

func TestSandboxStopsWritingMaskedConfigThroughHardLink(t *testing.T) {
	t.Parallel()
	checkOwnFiles(t, "hardlink_write", "WORK/src", "WORK/mcpwarden.yaml")
}

// mcpwarden's own view of its files is through its own mount namespace:
// /proc/<pid>/root of a process outside the sandbox's.
func TestSandboxStopsReadingMaskedConfigThroughParentsRoot(t *testing.T) {
	t.Parallel()
	w, p := ownWorld(t, nsTier)
	s := start(t, w, nsTier, sessionOpts{policy: &p})
	path := "/proc/" + itoa(s.cmd.Process.Pid) + "/root" + w.work + "/mcpwarden.yaml"
	if got := s.call("read_file", path, ""); strings.HasPrefix(got, "ESCAPED") {
		t.Fatalf("the server read the config through %s: %s", path, got)
	}
}

// A mask is a mount: unmounting it would bare the file. (Unsandboxed there
// is no mount to remove, so there is no plain run.)
func TestSandboxStopsUnmountingMaskOverConfig(t *testing.T) {
	t.Parallel()
	for _, hidden := range []string{"/mcpwarden.yaml", "/.mcpwarden"} {
		w, p := ownWorld(t, nsTier)
		s := start(t, w, nsTier, sessionOpts{policy: &p})
		if got := s.call("unmount_read", w.work+hidden, ""); strings.HasPrefix(got, "ESCAPED") {
			t.Fatalf("the server unmounted the mask over %s: %s", hidden, got)
		} else {
			t.Log(got)
		}
	}
}

// Hiding mcpwarden's files leaves the server its workspace and its own
// HOME, which lies inside the hidden state directory.
func TestSandboxMaskKeepsWorkspaceAndHomeUsable(t *testing.T) {
	t.Parallel()
	w, p := ownWorld(t, nsTier)
	s := start(t, w, nsTier, sessionOpts{policy: &p})
	for _, path := range []string{w.work + "/src/main.go", p.Home + "/notes.txt"} {
		if got := s.call("read_file", path, ""); !strings.HasPrefix(got, "ESCAPED") {
			t.Errorf("reading %s: %s, want it read", path, got)
		}
	}
	if got := s.call("append_file", p.Home+"/notes.txt", ""); !strings.HasPrefix(got, "ESCAPED") {
		t.Errorf("writing its HOME: %s, want it written", got)
	}
	rep, _ := s.report()
	if !rep.Has(ConfineMaskOwnFiles) || len(rep.Masked) != 2 {
		t.Errorf("report = %+v, want %s with 2 files masked", rep, ConfineMaskOwnFiles)
	}
}

// checkInTierNamespaces runs try unsandboxed (it must escape) and in tier
// namespaces (it must not), for what only tier namespaces' own mounts
// stop (a dropped file mapped executable other than by execve, a file
// bound read-only): in tier landlock the attempt is logged, not failed,
// as the README says.
func checkInTierNamespaces(t *testing.T, try escape) {
	t.Helper()
	for _, m := range []mode{plain, nsTier, llTier} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			got := try(t, newWorld(t), m)
			escaped := strings.HasPrefix(got, "ESCAPED")
			switch {
			case m == plain && !escaped:
				t.Fatalf("unsandboxed, the attempt failed, so it proves nothing: %s", got)
			case m == nsTier && escaped:
				t.Fatalf("in tier %s the server escaped: %s", m.name, got)
			}
			t.Logf("%s: %s", m.name, got)
		})
	}
}

func TestSandboxStopsRunningDroppedBinaryThroughDynamicLoaderInWorkspace(t *testing.T) {
	t.Parallel()
	checkInTierNamespaces(t, tool("ldso_dropped", func(w world) (string, string) { return w.work, "" }))
}

func TestSandboxStopsRunningDroppedBinaryThroughDynamicLoaderInTmpDir(t *testing.T) {
	t.Parallel()
	checkInTierNamespaces(t, tool("ldso_dropped", func(w world) (string, string) { return w.sbxTmp, "" }))
}

func TestSandboxStopsRunningDroppedBinaryThroughDynamicLoaderInHome(t *testing.T) {
	t.Parallel()
	checkInTierNamespaces(t, tool("ldso_dropped", func(w world) (string, string) { return w.sbxHome, "" }))
}

// A package runner executes what it downloads into its cache, which lies
// in the server's HOME: that directory stays executable, and the report
// says so.
func TestSandboxKeepsPackageCacheExecutable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cache := w.sbxHome + "/.npm"
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Lchown(cache, env.uid, env.gid)
	p := w.policy(nsTier)
	p.Exec = []string{cache}
	s := start(t, w, nsTier, sessionOpts{policy: &p})
	if got := s.call("exec_dropped_elf", cache, ""); !strings.HasPrefix(got, "ESCAPED") {
		t.Fatalf("running a binary in the package cache: %s, want it run", got)
	}
	if got := s.call("ldso_dropped", w.sbxHome, ""); strings.HasPrefix(got, "ESCAPED") {
		t.Fatalf("the rest of HOME is executable: %s", got)
	}
	rep, _ := s.report()
	if !rep.Has(ConfineNoExecWritable) || len(rep.ExecWritable) != 1 || rep.ExecWritable[0] != cache {
		t.Errorf("report = %+v, want %s with the cache listed as executable", rep, ConfineNoExecWritable)
	}
}

// The launcher holds CAP_SYS_ADMIN in its user namespace to shape its
// mounts; the server must hold no capability at all. (Unsandboxed, the
// unprivileged user has none to begin with, so there is no plain run.)
func TestSandboxServerInheritsNoCapabilityFromLauncher(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if got := start(t, w, nsTier, sessionOpts{}).call("capabilities", "", ""); strings.HasPrefix(got, "ESCAPED") {
		t.Fatalf("the server %s", got)
	}
}

// A file in memory is on no mount, noexec or not: one the server writes
// must not be executable either.
func TestSandboxStopsExecutingDroppedBinaryFromMemfd(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("memfd_exec", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsExecutingDroppedBinaryFromMemfdThroughExecveat(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("memfd_execveat", func(w world) (string, string) { return "", "" }))
}

// A file system mounted inside the workspace is as writable as the
// workspace: it must not be executable either.
func TestSandboxStopsRunningDroppedBinaryThroughDynamicLoaderInMountInsideWorkspace(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("mounting a file system inside the workspace needs root")
	}
	checkInTierNamespaces(t, func(t *testing.T, w world, m mode) string {
		dir := w.work + "/mnt"
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,mode=0777"); err != nil {
			t.Skipf("mounting a tmpfs: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		return start(t, w, m, sessionOpts{}).call("ldso_dropped", dir, "")
	})
}

// Where the kernel allows a user namespace but no mounting in it (Ubuntu's
// AppArmor restriction), the server still starts in tier namespaces, but
// a file to hide makes it refuse unless require is false.
func TestSandboxWithoutMountsRefusesOnlyWhatItCannotHide(t *testing.T) {
	t.Parallel()
	w, p := ownWorld(t, nsTier)
	p.Disable = []Feature{FeatureMounts}
	s := start(t, w, nsTier, sessionOpts{policy: &p, noInit: true})
	if rep, ok := s.report(); !ok || rep.Started || !strings.Contains(rep.Error, "mcpwarden.yaml") || !strings.Contains(rep.Error, "cannot mount") {
		t.Fatalf("report = %+v, want the server refused, naming the file and why", rep)
	}
	w, p = ownWorld(t, nsTier)
	p.Disable, p.Hide = []Feature{FeatureMounts}, nil
	s = start(t, w, nsTier, sessionOpts{policy: &p})
	rep, ok := s.report()
	if !ok || !rep.Started || rep.Has(ConfineNoExecWritable) || rep.Has(ConfineMaskOwnFiles) {
		t.Fatalf("report = %+v, want started without %s", rep, ConfineNoExecWritable)
	}
	if got := s.call("capabilities", "", ""); strings.HasPrefix(got, "ESCAPED") {
		t.Fatalf("the server %s", got)
	}
}

// A client config in the workspace routes the client through mcpwarden:
// a server that rewrote it would take mcpwarden out of the next session.
// Tier namespaces binds it read-only; tier landlock cannot (the log names
// it), so there the attempt is logged, not failed.
func TestSandboxStopsRewritingClientConfigInWorkspace(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"append_file", "rename_out"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			checkInTierNamespaces(t, func(t *testing.T, w world, m mode) string {
				cfg := w.work + "/.mcp.json"
				if err := os.WriteFile(cfg, []byte(`{"mcpServers":{"mcpwarden":{}}}`), 0o644); err != nil {
					t.Fatal(err)
				}
				os.Lchown(cfg, env.uid, env.gid)
				p := w.policy(m)
				p.ReadOnly = []string{cfg}
				s := start(t, w, m, sessionOpts{policy: &p})
				if got := s.call("read_file", cfg, ""); !strings.HasPrefix(got, "ESCAPED") {
					t.Fatalf("the server cannot read the client config: %s", got)
				}
				if tool == "rename_out" {
					os.Mkdir(w.work+"/src", 0o755)
					os.Lchown(w.work+"/src", env.uid, env.gid)
					return s.call(tool, w.work+"/src", cfg)
				}
				return s.call(tool, cfg, "")
			})
		})
	}
}
