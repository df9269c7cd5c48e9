package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A Proof shows that one line is in a log whose signed checkpoint an
// auditor can check with the public key alone: the line, its place in the
// log's tree (Index, from 0: the line's number in its chain minus one),
// the inclusion proof (RFC 6962, base64 hashes) and the checkpoint.
// File and Line say where it was taken from, for people.
type Proof struct {
	File       string   `json:"file,omitempty"`
	Line       int      `json:"line,omitempty"`
	Index      int64    `json:"index"`
	Text       string   `json:"text"`
	Hashes     []string `json:"proof"`
	Checkpoint string   `json:"checkpoint"`
}

// maxProof bounds a proof's size: a tree of 2^63 lines needs 63 hashes.
const maxProof = 1 << 20

// ParseProof reads a proof as Prove writes it (JSON).
func ParseProof(data []byte) (Proof, error) {
	var p Proof
	if len(data) > maxProof {
		return p, errors.New("proof: too large")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("proof: %w", err)
	}
	if dec.More() {
		return p, errors.New("proof: more than one JSON value")
	}
	switch {
	case p.Index < 0:
		return p, fmt.Errorf("proof: index %d is negative", p.Index)
	case strings.ContainsAny(p.Text, "\n\r") || p.Text == "":
		return p, errors.New("proof: the text must be one line of the log, without its newline")
	case len(p.Hashes) > 64:
		return p, fmt.Errorf("proof: %d hashes, more than any tree needs", len(p.Hashes))
	case p.Checkpoint == "":
		return p, errors.New("proof: no checkpoint")
	}
	return p, nil
}

// Check verifies p with the public key alone: the checkpoint is signed by
// key, and the line is leaf Index of the tree the checkpoint signs. It
// returns the checkpoint.
func (p Proof) Check(key note.Verifiers) (Checkpoint, error) {
	c, err := OpenCheckpoint([]byte(p.Checkpoint), key)
	if err != nil {
		return c, err
	}
	if p.Index >= c.Size {
		return c, fmt.Errorf("proof: line index %d is not among the %d lines the checkpoint covers", p.Index, c.Size)
	}
	rp := make(tlog.RecordProof, len(p.Hashes))
	for i, s := range p.Hashes {
		if rp[i], err = tlog.ParseHash(s); err != nil {
			return c, fmt.Errorf("proof: hash %d: %w", i, err)
		}
	}
	sum := sha256.Sum256([]byte(p.Text))
	if err := tlog.CheckRecord(rp, c.Size, c.Root, p.Index, tlog.RecordHash(sum[:])); err != nil {
		return c, fmt.Errorf("proof: the line is not leaf %d of the signed tree of %d lines: %w", p.Index, c.Size, err)
	}
	return c, nil
}

// Prove returns the proof that line (from 1) of file, in the chain of
// files (oldest first, as Files lists them), is in the log: against the
// first checkpoint after it that covers it. A line no checkpoint covers
// yet cannot be proved; the error says so.
func Prove(files []string, file string, line int) (Proof, error) {
	p := Proof{File: file, Line: line}
	if line < 1 {
		return p, fmt.Errorf("line %d: lines are numbered from 1", line)
	}
	var (
		store  hashStore
		index  = int64(-1)
		offset int64 // lines in the files before
	)
	for _, f := range files {
		found, err := store.read(f, func(n int, text []byte) (bool, error) {
			if f == file && n == line {
				index, p.Text = offset+int64(n-1), string(text)
			}
			if index < 0 || !bytes.Contains(text, checkpointMark) {
				return false, nil
			}
			var e struct {
				Checkpoint string `json:"checkpoint"`
			}
			if err := json.Unmarshal(text, &e); err != nil {
				return false, nil
			}
			c, err := OpenCheckpoint([]byte(e.Checkpoint), nil)
			if err != nil || c.Size <= index || c.Size > store.n {
				return false, nil
			}
			rp, err := tlog.ProveRecord(c.Size, index, &store)
			if err != nil {
				return false, fmt.Errorf("proving line %d of %s: %w", line, file, err)
			}
			for _, h := range rp {
				p.Hashes = append(p.Hashes, h.String())
			}
			p.Index, p.Checkpoint = index, e.Checkpoint
			return true, nil
		})
		if err != nil || found {
			return p, err
		}
		offset = store.n
	}
	if index < 0 {
		return p, fmt.Errorf("%s has no line %d", file, line)
	}
	return p, fmt.Errorf("line %d of %s is not covered by a checkpoint yet: it is signed by the next one (every audit.checkpoint_every events, audit.checkpoint_interval, rotation or shutdown)", line, file)
}

// A hashStore holds the stored hashes of a tree (tlog's layout), to prove
// records with tlog.ProveRecord.
type hashStore struct {
	n      int64
	hashes []tlog.Hash
}

// ReadHashes returns the stored hashes at indexes.
func (s *hashStore) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(s.hashes)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = s.hashes[x]
	}
	return out, nil
}

// read calls fn with each line of the file at path before adding it to
// the tree, until fn reports done.
func (s *hashStore) read(path string, fn func(n int, text []byte) (bool, error)) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		text, err := br.ReadBytes('\n')
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading audit log %s: %w", path, err)
		}
		text = text[:len(text)-1]
		if done, err := fn(n, text); done || err != nil {
			return done, err
		}
		sum := sha256.Sum256(text)
		hs, err := tlog.StoredHashesForRecordHash(s.n, tlog.RecordHash(sum[:]), s)
		if err != nil {
			return false, err
		}
		s.hashes = append(s.hashes, hs...)
		s.n++
	}
}

// read1 adds one line to s (tests and fuzzing).
func (s *hashStore) read1(text string) {
	sum := sha256.Sum256([]byte(text))
	hs, err := tlog.StoredHashesForRecordHash(s.n, tlog.RecordHash(sum[:]), s)
	if err != nil {
		panic(err)
	}
	s.hashes = append(s.hashes, hs...)
	s.n++
}

// proveIndex is the proof of the line text at index against c, signed as
// msg, from the hashes in s.
func proveIndex(s *hashStore, c Checkpoint, index int64, text, msg string) (Proof, error) {
	rp, err := tlog.ProveRecord(c.Size, index, s)
	if err != nil {
		return Proof{}, err
	}
	p := Proof{Index: index, Text: text, Checkpoint: msg}
	for _, h := range rp {
		p.Hashes = append(p.Hashes, h.String())
	}
	return p, nil
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }
