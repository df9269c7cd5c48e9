package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Errors wrapped by the VerifyError of a log the checkpoints disprove.
var (
	// ErrBadCheckpoint: a checkpoint that is not signed by the key given,
	// or cannot be read.
	ErrBadCheckpoint = errors.New("bad checkpoint")
	// ErrTreeMismatch: the lines before a checkpoint (or a witnessed one)
	// do not hash to its signed root, or are not as many as it covers.
	ErrTreeMismatch = errors.New("lines do not match the signed checkpoint")
	// ErrCutTail: the log is shorter than a witnessed checkpoint.
	ErrCutTail = errors.New("log cut short")
	// ErrUnsigned: a key was given, but no line of the log is covered by
	// a checkpoint.
	ErrUnsigned = errors.New("no signed checkpoint")
)

// proofs is the Merkle-tree side of a verifier: the tree of the lines read,
// the checkpoints met, and the witnessed checkpoints to hold the log to.
type proofs struct {
	key         note.Verifiers
	trusted     bool // the tree holds every line of the log (else: a partial log before its first checkpoint)
	tree        tree
	checkpoints int
	signed      int64
	origin      string
	lastPath    string // where the last checkpoint is
	lastLine    int
	witness     map[string]Checkpoint
	watch       map[int64]*watched // the witnessed sizes, and the root of the log there
}

// A watched is the log's root at the size of a witnessed checkpoint, and
// the line that completes that size.
type watched struct {
	root tlog.Hash
	seen bool
	cp   bool // the checkpoint of that size is in the log
	path string
	line int
}

func (v *proofs) watchWitness(w map[string]Checkpoint) {
	v.witness = w
	v.watch = map[int64]*watched{}
	for _, c := range w {
		v.watch[c.Size] = &watched{}
	}
}

// leaf adds the line at path:n, whose SHA-256 is sum, to the tree.
func (v *proofs) leaf(sum [32]byte, path string, n int) {
	if !v.trusted {
		return
	}
	v.tree.add(sum)
	if w := v.watch[v.tree.n]; w != nil && !w.seen {
		*w = watched{root: v.tree.root(), seen: true, path: path, line: n}
	}
}

// checkpoint checks the checkpoint line at path:n, with the signed note
// msg and the tree's subtrees, against the lines before it.
func (v *proofs) checkpoint(msg string, subtrees []string, path string, n int) error {
	c, err := OpenCheckpoint([]byte(msg), v.key)
	if err != nil {
		if v.key != nil {
			return fmt.Errorf("%w: %v (replaced, forged, or signed by another key than the one given)", ErrBadCheckpoint, err)
		}
		return fmt.Errorf("%w: %v", ErrBadCheckpoint, err)
	}
	if v.origin == "" {
		v.origin = c.Origin
	} else if c.Origin != v.origin {
		return fmt.Errorf("%w: it is of the log %q, but this log's checkpoints are of %q (lines of another log were put in)", ErrBadCheckpoint, c.Origin, v.origin)
	}
	if !v.trusted {
		// A partial log: its tree starts here, from the signed subtrees.
		t, err := treeFromEdges(c.Size, subtrees, c.Root)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadCheckpoint, err)
		}
		v.tree, v.trusted = t, true
	} else {
		since := "the first line"
		if v.lastPath != "" {
			since = fmt.Sprintf("the checkpoint at %s:%d", v.lastPath, v.lastLine)
		}
		switch {
		case c.Size != v.tree.n:
			return fmt.Errorf("%w: it covers %d lines, but %d come before it in this log (lines were removed or inserted after %s, or the checkpoint was moved)", ErrTreeMismatch, c.Size, v.tree.n, since)
		case c.Root != v.tree.root():
			return fmt.Errorf("%w: the %d lines before it do not hash to its signed root: a line after %s was edited, removed, inserted or reordered, and the chain computed again (the log was rewritten)", ErrTreeMismatch, c.Size, since)
		}
	}
	v.checkpoints++
	v.signed, v.lastPath, v.lastLine = c.Size, path, n
	if w := v.watch[c.Size]; w != nil {
		w.cp = true
	}
	return nil
}

// endChecks holds the whole log to the key and the witness once every line
// is read: with a key, some checkpoint must cover it; the log must reach
// the witnessed checkpoint of its origin and match it there. It returns
// the size of the witnessed checkpoint it was held to.
func (v *verifier) endChecks(opts VerifyOptions) (int64, error) {
	if v.key != nil && v.lines > 0 && v.checkpoints == 0 {
		return 0, fmt.Errorf("%w: none of the %d lines is covered by a checkpoint: the log was written with audit.unsigned, or its checkpoints were removed (a rewrite)", ErrUnsigned, v.lines)
	}
	if len(v.witness) == 0 {
		return 0, nil
	}
	w, ok := v.witness[v.origin]
	if !ok && v.origin == "" && len(v.witness) == 1 {
		for _, c := range v.witness {
			w, ok = c, true
		}
	}
	if !ok {
		return 0, fmt.Errorf("%w: the witness holds no checkpoint of this log (%q); wrong witness, or the log's checkpoints were removed", ErrTreeMismatch, v.origin)
	}
	if !v.trusted {
		return 0, nil // a partial log without a checkpoint: nothing to hold it to
	}
	if w.Size > v.tree.n {
		return w.Size, &VerifyError{v.prevPath, v.prevLine + 1, fmt.Errorf("%w: the log ends after %d lines, but the witness holds a checkpoint of %d lines: the last %d lines were cut off or removed", ErrCutTail, v.tree.n, w.Size, w.Size-v.tree.n)}
	}
	seen := v.watch[w.Size]
	if seen == nil || !seen.seen {
		return 0, nil // a partial log that starts after the witnessed size
	}
	if seen.root != w.Root {
		return w.Size, &VerifyError{seen.path, seen.line, fmt.Errorf("%w: the first %d lines do not hash to the witnessed checkpoint's root: a line up to here was changed, removed, inserted or reordered, and the log rewritten", ErrTreeMismatch, w.Size)}
	}
	if !seen.cp {
		return w.Size, &VerifyError{v.prevPath, v.prevLine + 1, fmt.Errorf("%w: the witnessed checkpoint of %d lines, line %d of the log, is missing: it was cut off or removed", ErrCutTail, w.Size, w.Size+1)}
	}
	return w.Size, nil
}

// ReadWitness reads a witness file, the checkpoint lines mcpwarden wrote
// to it, and returns the newest checkpoint of each log in it, by origin.
// With key, every checkpoint must be signed by it. A last line without
// its newline (a write cut short) is ignored.
func ReadWitness(r io.Reader, key note.Verifiers) (map[string]Checkpoint, error) {
	out := map[string]Checkpoint{}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the witness: %w", err)
		}
		var e struct {
			Checkpoint string `json:"checkpoint"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.Checkpoint == "" {
			return nil, fmt.Errorf("witness line %d: not a checkpoint line", n)
		}
		c, err := OpenCheckpoint([]byte(e.Checkpoint), key)
		if err != nil {
			return nil, fmt.Errorf("witness line %d: %w", n, err)
		}
		if c.Size >= out[c.Origin].Size {
			out[c.Origin] = c
		}
	}
}

// ReadWitnessFile is ReadWitness of the file at path.
func ReadWitnessFile(path string, key note.Verifiers) (map[string]Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the witness: %w", err)
	}
	defer f.Close()
	return ReadWitness(f, key)
}
