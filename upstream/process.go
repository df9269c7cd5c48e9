package upstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// A process is a stdio server's child process. It runs in a process group
// of its own, so that stopping it also stops what it started (npx starts
// node, node may start more).
type process struct {
	logger *slog.Logger
	mu     sync.Mutex
	cmd    *exec.Cmd
}

// command is a transport.CommandFunc that starts the child in its own
// process group, in dir, with env added to mcpwarden's environment and its
// stderr sent to stderr.
func (p *process) command(dir string, stderr *stderrLog) func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	return func(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(command, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.mu.Lock()
		p.cmd = cmd
		p.mu.Unlock()
		return cmd, nil
	}
}

// killGroup sends SIGKILL to whatever is left of the child's process group.
// It is called after the transport has closed stdin and waited for the
// child, so a well-behaved server has long exited by then.
func (p *process) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		p.logger.Debug("killing upstream process group", "pid", p.cmd.Process.Pid, "err", err)
	}
}

// A stderrLog logs a child's stderr line by line and keeps the last lines,
// so that a server that fails to start can say why.
type stderrLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	buf    []byte
	last   []string
}

const stderrKeep = 10

func (s *stderrLog) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, b...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(s.buf[:i]), "\r")
		s.buf = s.buf[i+1:]
		if line == "" {
			continue
		}
		s.logger.Debug("upstream stderr", "line", line)
		s.last = append(s.last, line)
		if len(s.last) > stderrKeep {
			s.last = s.last[1:]
		}
	}
	if len(s.buf) > 64<<10 { // a very long line without a newline
		s.buf = s.buf[:0]
	}
	return len(b), nil
}

// tail returns the last lines the child wrote to stderr.
func (s *stderrLog) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.last, "\n")
}
