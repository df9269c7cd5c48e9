package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// A process is a stdio server's child process. It runs in a process group
// of its own, so that stopping it also stops what it started (npx starts
// node, node may start more). The pool owns its pipes (the transport only
// frames messages on them), so that it learns at once when the child exits
// and can bound what it reads from the child's stdout.
type process struct {
	logger *slog.Logger
	cmd    *exec.Cmd
	stdin  *os.File // write end of the child's stdin
	stdout *os.File // read end of the child's stdout
	stderr *stderrLog
	// sandbox is what the launcher applied; nil for a server started
	// unconfined.
	sandbox *sandbox.Report
	// exposed are the files self-protection guards that the sandbox's
	// grants reach all the same (see Sandbox.command).
	exposed []string
	// pid is the server's process ID as mcpwarden sees it: cmd's, or the
	// one the sandbox reports when cmd is its supervisor.
	pid int
	// egress is the egress proxy of a server with network: proxy, closed
	// once the process has exited; nil for any other.
	egress io.Closer

	stderrR    *os.File
	stderrDone chan struct{} // closed when the child's stderr is drained
	exited     chan struct{} // closed when the child has exited and been reaped
	waitErr    error         // set before exited is closed
}

// checkDir fails unless spec.Dir is a directory, naming it and where it
// was set: the start would fail too, but its error names the command (a
// missing /usr/bin/npx), not the folder.
func checkDir(spec Spec) error {
	if spec.Dir == "" {
		return nil
	}
	fi, err := os.Stat(spec.Dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		err = errors.New("it is not a directory")
	case errors.Is(err, fs.ErrNotExist):
		err = errors.New("it does not exist")
	}
	if spec.DirOrigin == "" {
		return fmt.Errorf("working directory %q: %w", spec.Dir, err)
	}
	return fmt.Errorf("%s: %q: %w, so the server cannot start in it; create the folder or correct cwd", spec.DirOrigin, spec.Dir, err)
}

// startProcess starts spec's command through sp, in a process group of
// its own (see procAttr), in spec.Dir, with its stderr logged line by
// line. Unsandboxed, spec.Env is added to mcpwarden's environment; with
// spec.Sandbox it runs through the launcher (see startSandboxed), and ctx
// bounds the wait for the launcher's report.
func startProcess(ctx context.Context, spec Spec, logger *slog.Logger, sp *spawner) (*process, error) {
	if spec.Command == "" {
		return nil, errors.New("no command to run")
	}
	if err := checkDir(spec); err != nil {
		return nil, err
	}
	var (
		cmd     *exec.Cmd
		start   func() error
		wait    func() error
		sbx     *sandbox.Cmd
		exposed []string
	)
	if spec.Sandbox != nil {
		var err error
		// The process outlives ctx, which bounds only its start: stop
		// ends it.
		if sbx, exposed, err = spec.Sandbox.command(context.WithoutCancel(ctx), spec); err != nil {
			return nil, err
		}
		cmd, start, wait = sbx.Cmd, sbx.Start, sbx.Wait
	} else {
		cmd = exec.Command(spec.Command, spec.Args...)
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
			cmd.Env = append(cmd.Env, k+"="+spec.Env[k])
		}
		cmd.SysProcAttr = procAttr()
		start, wait = cmd.Start, cmd.Wait
	}
	cmd.Dir = spec.Dir

	var files []*os.File // every pipe end, for cleanup on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := sp.start(start); err != nil {
		closeAll()
		return nil, err
	}
	// The child has its copies; ours of its ends would keep the pipes open.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		logger:     logger,
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		stderr:     &stderrLog{logger: logger},
		stderrR:    errR,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		pid:        cmd.Process.Pid,
	}
	go func() {
		defer close(p.stderrDone)
		copyStderr(p.stderr, errR)
		errR.Close() // not left to the finalizer: one fd per (re)start until a GC
	}()
	go func() {
		p.waitErr = wait()
		close(p.exited)
	}()
	if sbx != nil {
		rep, err := sbx.Report(ctx)
		if err != nil {
			p.stop(0)
			return nil, err
		}
		p.sandbox, p.exposed = &rep, exposed
		if rep.PID != 0 {
			p.pid = rep.PID
		}
		if l := sbx.ProxyListener(); l != nil {
			if spec.egress == nil {
				l.Close() // nothing to serve it: the server reaches nothing
			} else {
				p.egress = spec.egress(l)
			}
		}
		logger.Info("upstream sandboxed", "sandbox", rep.String())
		if len(exposed) > 0 && rep.Has(sandbox.ConfineMaskOwnFiles) {
			logger.Info("the sandbox masks mcpwarden's own files inside what this server may reach", "files", exposed, "masked", rep.Masked)
		} else if len(exposed) > 0 {
			logger.Warn("the sandbox cannot keep this server from mcpwarden's own files inside what it may reach; move them out of its workspace and installation", "files", exposed)
		}
	}
	return p, nil
}

// hasExited reports whether the child has exited; when soon is set (its
// stdout was just closed) it waits briefly for that.
func (p *process) hasExited(soon bool) bool {
	if isClosed(p.exited) {
		return true
	}
	if !soon {
		return false
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// signalled reports whether the child was ended by a signal that asks a
// process to stop (SIGTERM, SIGINT, SIGHUP): sent by whoever is stopping
// mcpwarden too, say, rather than a crash. It is false until the child has
// been reaped, and always outside Unix (see stopRequested).
func (p *process) signalled() bool {
	return isClosed(p.exited) && stopRequested(p.cmd.ProcessState)
}

// exitError describes how the child ended, with the last lines of its
// stderr. It waits briefly for stderr to be drained, so that the reason a
// crashing server printed is not lost to the race with its exit.
func (p *process) exitError() error {
	select {
	case <-p.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
	msg := "process exited"
	if p.waitErr != nil {
		msg += ": " + p.waitErr.Error()
	}
	return errors.New(msg + p.stderrTail())
}

// stderrTail is "; its stderr ended with:\n…", or "" when it wrote none.
func (p *process) stderrTail() string {
	if tail := p.stderr.tail(); tail != "" {
		return "; its stderr ended with:\n" + tail
	}
	return ""
}

// stop ends the child: it closes its stdin (the MCP way to ask a stdio
// server to exit), gives it grace to exit, then sends SIGTERM and, after
// the same grace, SIGKILL to its whole process group (outside Unix it
// kills the child alone: see terminateGroup). Whatever is left of
// the group is killed even when the child exited by itself, and the pipes
// are closed, so that no reader of them is left behind. stop returns when
// the child has been reaped and stderr drained; it is idempotent.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.terminateGroup()
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
	}
	p.killGroup()
	<-p.exited
	if p.egress != nil {
		p.egress.Close()
	}
	select {
	case <-p.stderrDone:
	case <-time.After(grace):
		p.stderrR.Close() // a grandchild outside the group holds it open
		<-p.stderrDone
	}
	p.stdout.Close()
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

// copyStderr copies the child's stderr into s until it ends. The buffer
// is small, as stderr is a trickle of log lines that s gathers itself, and
// one lives per running child (io.Copy's is 32 KiB).
func copyStderr(s *stderrLog, r io.Reader) {
	buf := make([]byte, 2<<10)
	for {
		n, err := r.Read(buf)
		_, _ = s.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

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
