package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// forChild is the sandbox of an isolated child of key: the same, but
// with a private HOME and TMPDIR of its own, so no child reads what
// another wrote to its HOME. They lie beside the server's own (not in
// them: the template's process must not reach a child's either), in
// isolated/<hash of the key>/, which Sandbox.command creates 0700. A
// hash, since principals and sessions are ids that callers choose.
//
// The returned function removes them once the child has stopped, for a
// child per session: a session that ended does not come back, and what
// its child wrote (a package runner's cache, which then is downloaded
// again for the next session, included) is no one else's. A child per
// principal keeps them, as the server keeps its own across restarts: the
// principal's next child finds its state and its package cache.
func (sb *Sandbox) forChild(key childKey, i Isolation) (*Sandbox, func()) {
	c := *sb
	sum := sha256.Sum256([]byte(key.principal + "\x00" + key.session))
	name := hex.EncodeToString(sum[:16])
	var dirs []string
	for _, d := range []*string{&c.Policy.Home, &c.Policy.TmpDir} {
		if *d == "" {
			continue
		}
		dir := filepath.Join(filepath.Dir(*d), "isolated", name)
		*d = filepath.Join(dir, filepath.Base(*d))
		dirs = append(dirs, dir)
	}
	if i != IsolationPerSession {
		return &c, func() {}
	}
	return &c, func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
}
