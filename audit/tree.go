package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The log is also a Merkle tree with RFC 6962 hashing (tlog): leaf i is
// tlog.RecordHash of the SHA-256 of line i+1 without its newline (the
// digest the next line names in prev_sha256), so the tree costs one short
// hash per line on top of the chain. Each chain (one Log's files, oldest
// first) is one tree; a checkpoint line covers exactly the lines before it
// in its chain and is itself the next leaf.

// A tree is the right edge of a Merkle tree of n leaves: the roots of its
// perfect subtrees, largest (leftmost) first, one for each bit set in n.
// It is all it takes to add a leaf and to compute the root hash. The zero
// value is the empty tree.
type tree struct {
	n     int64
	edges []tlog.Hash
}

// add appends the leaf for the line whose SHA-256 is sum.
func (t *tree) add(sum [32]byte) {
	t.edges = append(t.edges, leafHash(sum))
	for k := t.n; k&1 == 1; k >>= 1 {
		last := len(t.edges) - 1
		t.edges[last-1] = nodeHash(t.edges[last-1], t.edges[last])
		t.edges = t.edges[:last]
	}
	t.n++
}

// leafHash is tlog.RecordHash(sum[:]), RFC 6962's leaf hash, without the
// allocations: SHA-256(0x00 || sum).
func leafHash(sum [32]byte) tlog.Hash {
	var b [1 + 32]byte
	copy(b[1:], sum[:])
	return sha256.Sum256(b[:])
}

// nodeHash is tlog.NodeHash, RFC 6962's interior node hash, without the
// allocations: SHA-256(0x01 || left || right).
func nodeHash(left, right tlog.Hash) tlog.Hash {
	var b [1 + 2*32]byte
	b[0] = 1
	copy(b[1:], left[:])
	copy(b[33:], right[:])
	return sha256.Sum256(b[:])
}

// root returns the root hash of the tree, as tlog.TreeHash does: the zero
// Hash for the empty tree.
func (t *tree) root() tlog.Hash {
	if len(t.edges) == 0 {
		return tlog.Hash{}
	}
	h := t.edges[len(t.edges)-1]
	for i := len(t.edges) - 2; i >= 0; i-- {
		h = nodeHash(t.edges[i], h)
	}
	return h
}

// edgeStrings returns the edges as a checkpoint event carries them.
func (t *tree) edgeStrings() []string {
	out := make([]string, len(t.edges))
	for i, h := range t.edges {
		out[i] = h.String()
	}
	return out
}

// treeFromEdges rebuilds the tree of n leaves from its edges, as a
// checkpoint event carries them, checking that there is one for each bit
// of n and that they hash to root.
func treeFromEdges(n int64, edges []string, root tlog.Hash) (tree, error) {
	t := tree{n: n}
	if want := popcount(n); len(edges) != want {
		return t, fmt.Errorf("a tree of %d lines has %d subtrees, the checkpoint names %d", n, want, len(edges))
	}
	for _, s := range edges {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return t, fmt.Errorf("subtree hash %q: %w", s, err)
		}
		t.edges = append(t.edges, h)
	}
	if t.root() != root {
		return t, errors.New("the subtree hashes do not hash to the signed root")
	}
	return t, nil
}

func popcount(n int64) int {
	c := 0
	for ; n > 0; n &= n - 1 {
		c++
	}
	return c
}

// CheckpointOrigin is the start of the first line of every mcpwarden
// checkpoint; a replica's log adds "/<replica id>".
const CheckpointOrigin = "mcpwarden/audit"

// KeyName is the name of the signing keys mcpwarden generates.
const KeyName = "mcpwarden-audit"

// A Checkpoint is the signed statement that a log's first Size lines hash
// to Root: the text of a signed note (golang.org/x/mod/sumdb/note) of
// three lines, origin, size and the base64 root, as C2SP's checkpoints.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// text is the note text of c.
func (c Checkpoint) text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, c.Root)
}

// maxCheckpointText bounds a checkpoint note's text, origin included.
const maxCheckpointText = 1024

// ParseCheckpoint parses the text of a checkpoint note (without its
// signatures): an origin starting with CheckpointOrigin, a decimal size
// greater than 0 without leading zeros, and a base64 root hash, each on a
// line of its own.
func ParseCheckpoint(text string) (Checkpoint, error) {
	var c Checkpoint
	if len(text) > maxCheckpointText {
		return c, errors.New("checkpoint: too long")
	}
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return c, errors.New("checkpoint: want three lines: origin, size, root hash")
	}
	c.Origin = lines[0]
	if c.Origin != CheckpointOrigin && !strings.HasPrefix(c.Origin, CheckpointOrigin+"/") {
		return c, fmt.Errorf("checkpoint: origin %q is not an mcpwarden audit log (%s…)", c.Origin, CheckpointOrigin)
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint: size %q is not a positive decimal", lines[1])
	}
	c.Size = n
	if c.Root, err = tlog.ParseHash(lines[2]); err != nil {
		return c, fmt.Errorf("checkpoint: root hash: %w", err)
	}
	return c, nil
}

// OpenCheckpoint checks the signed note msg with the verifiers and parses
// its text. With no verifiers, it parses the text and checks no signature.
func OpenCheckpoint(msg []byte, verifiers note.Verifiers) (Checkpoint, error) {
	if verifiers == nil {
		text, _, ok := bytes.Cut(msg, []byte("\n\n"))
		if !ok {
			return Checkpoint{}, errors.New("checkpoint: not a signed note (no blank line before the signatures)")
		}
		return ParseCheckpoint(string(text) + "\n")
	}
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	return ParseCheckpoint(n.Text)
}

// signCheckpoint returns c as a note signed by s.
func signCheckpoint(c Checkpoint, s note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: c.text()}, s)
	if err != nil {
		return nil, fmt.Errorf("signing audit checkpoint: %w", err)
	}
	return msg, nil
}

// origin is the checkpoint origin of a log of replica ("" for none).
func origin(replica string) string {
	if replica == "" {
		return CheckpointOrigin
	}
	return CheckpointOrigin + "/" + replica
}
