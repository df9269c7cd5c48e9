package upstream

import (
	"errors"
	"runtime"
	"sync"
)

// errSpawnerClosed is returned by a spawner after Close.
var errSpawnerClosed = errors.New("the pool is closed; no process is started")

// A spawner starts a pool's stdio children from one goroutine locked to
// its OS thread, for the whole life of the pool.
//
// On Linux each child is started with a parent-death signal (Pdeathsig,
// see procAttr), so that it is killed when mcpwarden dies, even by
// SIGKILL. The kernel sends that signal when the *thread* that forked the
// child exits, not the process: had the child been started from any
// goroutine, the Go runtime could end the OS thread under it (it does
// when a goroutine that locked its thread returns without unlocking) and
// the child would be killed while mcpwarden runs on. Starting every child
// from this one locked goroutine keeps the forking thread alive exactly as
// long as the spawner, which outlives every child of the pool: Close is
// called after the pool has stopped them all. A sandboxed server's
// launcher is started here too (sandbox.Cmd.Start), and its own
// SysProcAttr carries the same parent-death signal.
type spawner struct {
	reqs      chan spawnRequest
	done      chan struct{}
	closeOnce sync.Once
}

type spawnRequest struct {
	start func() error // cmd.Start, or a sandboxed command's Start
	reply chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnRequest), done: make(chan struct{})}
	go sp.loop()
	return sp
}

// loop starts the commands it is given, on its own locked OS thread, until
// Close. It returns with the thread still locked, so the runtime ends that
// thread: any child still running then gets its parent-death signal.
func (sp *spawner) loop() {
	runtime.LockOSThread()
	for {
		select {
		case req := <-sp.reqs:
			req.reply <- req.start()
		case <-sp.done:
			return
		}
	}
}

// start runs start (an exec.Cmd's Start, or a sandbox.Cmd's, which starts
// the launcher) on the spawner's thread.
func (sp *spawner) start(start func() error) error {
	req := spawnRequest{start: start, reply: make(chan error, 1)}
	select {
	case sp.reqs <- req:
		return <-req.reply
	case <-sp.done:
		return errSpawnerClosed
	}
}

// Close ends the spawner's goroutine and thread. Call it once every child
// it started has been stopped. It is idempotent.
func (sp *spawner) Close() {
	sp.closeOnce.Do(func() { close(sp.done) })
}
