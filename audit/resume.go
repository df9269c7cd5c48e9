package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// resumed is the tree of an existing log and the size of its last
// checkpoint.
type resumed struct {
	tree   tree
	signed int64
	quiet  int64 // the tree's size just after the last checkpoint line
}

// checkpointMark is how a checkpoint line starts after its time: no other
// event kind has this text there.
var checkpointMark = []byte(`","event":"checkpoint",`)

// resumeTree rebuilds the tree of the log at path from its newest
// checkpoint: it looks for one from the newest file back (a signing Log
// writes one after every rotation and at Close, so it is almost always in
// the newest file, near its end), takes the tree there from the
// checkpoint's subtrees, and adds the lines after it. A log without a
// checkpoint is hashed from its first line.
func resumeTree(path string) (resumed, error) {
	files, err := Files(path)
	if err != nil {
		return resumed{}, err
	}
	from := 0
	for i := len(files) - 1; i >= 0; i-- {
		found, err := hasCheckpoint(files[i])
		if err != nil {
			return resumed{}, err
		}
		if found {
			from = i
			break
		}
	}
	var r resumed
	for _, f := range files[from:] {
		if err := r.file(f); err != nil {
			return resumed{}, err
		}
	}
	return r, nil
}

// hasCheckpoint reports whether the file at path holds a checkpoint line.
func hasCheckpoint(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Contains(line, checkpointMark) {
			return true, nil
		}
		switch {
		case err == io.EOF:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return false, fmt.Errorf("reading audit log %s: %w", path, err)
		}
	}
}

// file adds the lines of the file at path to r, taking the tree from each
// checkpoint whose subtrees hash to its root.
func (r *resumed) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil // a torn last line is refused by OpenFile already
		}
		if err != nil {
			return fmt.Errorf("reading audit log %s: %w", path, err)
		}
		line = line[:len(line)-1]
		cp := false
		if bytes.Contains(line, checkpointMark) {
			var t tree
			if t, cp = treeAt(line); cp {
				r.tree, r.signed = t, t.n
			}
		}
		r.tree.add(sha256.Sum256(line))
		if cp {
			r.quiet = r.tree.n
		}
	}
}

// treeAt returns the tree a checkpoint line names, unless it does not
// hold together (its subtrees do not hash to its root). Its signature is
// not checked: a forged one is for audit verify to find.
func treeAt(line []byte) (tree, bool) {
	var e struct {
		Checkpoint string   `json:"checkpoint"`
		Subtrees   []string `json:"subtrees"`
	}
	if json.Unmarshal(line, &e) != nil {
		return tree{}, false
	}
	c, err := OpenCheckpoint([]byte(e.Checkpoint), nil)
	if err != nil {
		return tree{}, false
	}
	t, err := treeFromEdges(c.Size, e.Subtrees, c.Root)
	return t, err == nil
}

// openWitness opens the sink of cfg.Witness: stderr (opts.Stderr), an
// HTTP endpoint, or a file, appended to (synced with audit.fsync).
func openWitness(cfg Config, opts *Options) (Sink, error) {
	w := cfg.Witness
	switch {
	case w == WitnessStderr:
		out := io.Writer(os.Stderr)
		if opts.Stderr != nil {
			out = opts.Stderr
		}
		return NewWriterSink(out), nil
	case strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://"):
		if _, err := url.Parse(w); err != nil {
			return nil, fmt.Errorf("audit.witness: %w", err)
		}
		return NewHTTPSink(w, opts.HTTPClient), nil
	}
	s, err := OpenFile(w, FileOptions{Fsync: cfg.Fsync})
	if err != nil {
		return nil, fmt.Errorf("audit.witness: %w", err)
	}
	return s, nil
}
