package upstream

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestPIDIsTheProcessServingTheCalls(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := Start(t.Context(), map[string]Spec{
		"stdio":    {Transport: TransportStdio, Command: os.Args[0], Dir: dir, Env: map[string]string{stdioServerEnv: filepath.Join(dir, "pid")}},
		"isolated": {Transport: TransportStdio, Command: os.Args[0], Dir: dir, Isolation: IsolationPerSession, Env: map[string]string{stdioServerEnv: filepath.Join(dir, "pid2")}},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("stdio"); err != nil {
		t.Fatal(err)
	}
	pid, ok := pool.PID("stdio")
	if !ok {
		t.Fatal("PID(stdio) is not known")
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && cwd != dir {
		t.Errorf("process %d works in %q, want the server's %q", pid, cwd, dir)
	}
	for _, name := range []string{"isolated", "unknown"} {
		if pid, ok := pool.PID(name); ok {
			t.Errorf("PID(%s) = %d, want none: no one process serves its calls", name, pid)
		}
	}
}
