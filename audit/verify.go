package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/mod/sumdb/note"
)

// ErrChainBroken is wrapped by the VerifyError for a line whose prev_sha256
// does not match the line before it.
var ErrChainBroken = errors.New("hash chain broken")

// A VerifyError locates the first bad line found by Verify: Path and Line
// (1-based) name it, Err says what is wrong.
type VerifyError struct {
	Path string
	Line int
	Err  error
}

func (e *VerifyError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

func (e *VerifyError) Unwrap() error { return e.Err }

// VerifyOptions change where Verify expects the chain to start. The zero
// value expects the first line to be the first event of a log (prev_sha256
// ""). Prev, if set, is the expected prev_sha256 of the first line (the
// LastSHA256 of an earlier, separately verified part). Partial accepts
// whatever the first line links to, for a log whose oldest rotated files were
// deleted (max_backups); lines lost before it then go unnoticed.
//
// Key, when set, is the public key of the log's checkpoints (note
// verifier): every checkpoint must be signed by it, and a log with lines
// but no checkpoint is refused. Witness holds the newest witnessed
// checkpoint of each log (ReadWitness): the log must reach its size, and
// its first lines must hash to its root. Checkpoints are checked either
// way: each must cover exactly the lines before it in its chain.
type VerifyOptions struct {
	Prev    string
	Partial bool
	Key     note.Verifiers
	Witness map[string]Checkpoint
}

// A VerifyResult sums up a verified chain. LastSHA256 is the hash of its last
// line: recording it elsewhere is what makes cutting lines off the end
// detectable, which the chain alone cannot do. Replicas are the replica ids
// its events carry, in the order they first appear: one for a replica's
// log, none for a log written without a replica id, more when a log was
// handed from one replica id to another.
//
// Checkpoints counts the checkpoint lines; Signed is the size of the last
// one, and Unsigned the lines after it, which no checkpoint covers yet.
// Origin is the checkpoints' origin; Witnessed the size of the witnessed
// checkpoint the log was held against (0: none).
type VerifyResult struct {
	Files       int
	Lines       int
	LastSHA256  string
	Replicas    []string
	Checkpoints int
	Signed      int64
	Unsigned    int64
	Origin      string
	Witnessed   int64
}

// Verify checks the hash chain through the files at paths, in the order
// given (use Files to list a rotated log), expecting a fresh log's genesis at
// the start. It returns the number of lines verified and, for the first bad
// line (not JSON, no prev_sha256, a link that does not match because a line
// was altered, deleted, inserted or moved, or a last line without its
// newline), a *VerifyError naming the file and line. Other errors (a file
// that cannot be read) name the file.
func Verify(paths ...string) (lines int, err error) {
	r, err := VerifyWith(VerifyOptions{}, paths...)
	return r.Lines, err
}

// VerifyWith is Verify with options.
func VerifyWith(opts VerifyOptions, paths ...string) (VerifyResult, error) {
	var res VerifyResult
	if len(paths) == 0 {
		return res, errors.New("verify: no audit files given")
	}
	v := verifier{prev: []byte(opts.Prev), partial: opts.Partial, first: true, proofs: proofs{key: opts.Key, trusted: !opts.Partial}}
	v.watchWitness(opts.Witness)
	fill := func() {
		res.Lines, res.LastSHA256, res.Replicas = v.lines, string(v.prev), v.replicas
		res.Checkpoints, res.Signed, res.Origin = v.checkpoints, v.signed, v.origin
		res.Unsigned = int64(v.lines)
		if v.checkpoints > 0 {
			res.Unsigned = v.tree.n - v.signed - 1
		}
	}
	for _, p := range paths {
		if err := v.file(p); err != nil {
			fill()
			return res, err
		}
		res.Files++
	}
	fill()
	w, err := v.endChecks(opts)
	res.Witnessed = w
	return res, err
}

type verifier struct {
	prev     []byte // hex hash of the previous line
	prevPath string // where the previous line is, for messages
	prevLine int
	partial  bool
	first    bool // no line seen yet
	lines    int
	replicas []string // the replica ids seen, in order
	// lastReplica is the JSON text of the last replica id decoded.
	lastReplica []byte
	proofs
}

func (v *verifier) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte // a line longer than br's buffer
	for n := 1; ; n++ {
		line, err := readLine(br, &long)
		if err == io.EOF {
			if len(line) == 0 {
				return nil
			}
			return &VerifyError{path, n, errors.New("incomplete last line (no newline): the write was cut short or the file was edited")}
		}
		if err != nil {
			return fmt.Errorf("verify: reading %s: %w", path, err)
		}
		line = line[:len(line)-1]
		if err := v.line(line, path, n); err != nil {
			return &VerifyError{path, n, err}
		}
		sum := sha256.Sum256(line)
		v.prev, v.prevPath, v.prevLine = hex.AppendEncode(v.prev[:0], sum[:]), path, n
		v.first = false
		v.lines++
		v.leaf(sum, path, n)
	}
}

func (v *verifier) line(line []byte, path string, n int) error {
	var want []byte // the hash of the line before, in hex: never the caller's Prev
	if !v.first {
		want = v.prev
	}
	if prev, replica, ok := fastLine(line, want); ok {
		if len(replica) > 2 && !bytes.Equal(replica, v.lastReplica) {
			var id string
			if err := json.Unmarshal(replica, &id); err != nil {
				return fmt.Errorf("not a JSON event: replica: %w", err)
			}
			if !slices.Contains(v.replicas, id) {
				v.replicas = append(v.replicas, id)
			}
			v.lastReplica = append(v.lastReplica[:0], replica...)
		}
		return v.chain(prev, path)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("empty line")
	}
	var e struct {
		Prev       *string  `json:"prev_sha256"`
		Replica    string   `json:"replica"`
		Event      string   `json:"event"`
		Checkpoint string   `json:"checkpoint"`
		Subtrees   []string `json:"subtrees"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return fmt.Errorf("not a JSON event: %w", err)
	}
	if e.Prev == nil {
		return errors.New("no prev_sha256 field")
	}
	if e.Replica != "" && !slices.Contains(v.replicas, e.Replica) {
		v.replicas = append(v.replicas, e.Replica)
	}
	if err := v.chain([]byte(*e.Prev), path); err != nil {
		return err
	}
	if e.Event == "checkpoint" {
		return v.checkpoint(e.Checkpoint, e.Subtrees, path, n)
	}
	return nil
}

// chain checks that got, the prev_sha256 of the line at path, links it to
// the line before.
func (v *verifier) chain(got []byte, path string) error {
	switch {
	case v.first && v.partial:
		return nil
	case bytes.Equal(got, v.prev):
		return nil
	case v.first && len(v.prev) == 0:
		return fmt.Errorf("%w: prev_sha256 is %q, but the first event of a log has \"\" (earlier lines or files missing? verify them too, or accept a pruned log with --partial)", ErrChainBroken, got)
	case v.first:
		return fmt.Errorf("%w: prev_sha256 is %q, want %q", ErrChainBroken, got, string(v.prev))
	case v.prevPath != path:
		return fmt.Errorf("%w: prev_sha256 does not match the last line of %s (files out of order, or lines missing between them)", ErrChainBroken, v.prevPath)
	default:
		return fmt.Errorf("%w: prev_sha256 does not match line %d (line %d was altered, or lines were deleted, inserted or reordered here)", ErrChainBroken, v.prevLine, v.prevLine)
	}
}

// fastLine reads prev_sha256 and the replica id's JSON text off a line as
// Log writes it, without decoding it: {"time":"…","event":"<kind>","id":…,
// then "replica":… if set, and last "prev_sha256":"<64 hex digits or
// none>"}. A line of any other shape, and every checkpoint line, is not
// read (ok false) and is decoded in full instead. The bytes between are
// not checked to be JSON: the chain and the tree cover them whole, so a
// line that was changed fails there; audit tail decodes every line.
//
// want, the prev_sha256 the line should have (64 lowercase hex digits, or
// nil), spares checking that the 64 characters found are hex digits.
func fastLine(line, want []byte) (prev, replica []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"time":"`))
	if !ok {
		return nil, nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return nil, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`","event":"`)); !ok {
		return nil, nil, false
	}
	if i = bytes.IndexByte(rest, '"'); i < 0 || !fastKind(rest[:i]) {
		return nil, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`","id":`)); !ok {
		return nil, nil, false
	}
	end := jsonStringEnd(rest)
	if end < 0 {
		return nil, nil, false
	}
	if r, found := bytes.CutPrefix(rest[end:], []byte(`,"replica":`)); found {
		if end = jsonStringEnd(r); end < 0 {
			return nil, nil, false
		}
		replica = r[:end]
	}
	const key = `,"prev_sha256":"`
	body, ok := bytes.CutSuffix(line, []byte(`"}`))
	switch {
	case !ok:
		return nil, nil, false
	case bytes.HasSuffix(body, []byte(key)):
		return body[len(body):], replica, true
	case len(body) >= 64+len(key) && bytes.HasSuffix(body[:len(body)-64], []byte(key)):
		if p := body[len(body)-64:]; bytes.Equal(p, want) || isLowerHex(p) {
			return p, replica, true
		}
	}
	return nil, nil, false
}

// fastKind reports whether kind is the name of a kind fastLine reads:
// every kind but checkpoint, whose line is checked in full.
func fastKind(kind []byte) bool {
	for k, name := range kindNames {
		if name != "" && Kind(k) != KindCheckpoint && string(kind) == name {
			return true
		}
	}
	return false
}

// jsonStringEnd returns the length of the JSON string at the start of b,
// quotes included, or -1 if b does not start with a whole one.
func jsonStringEnd(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return -1
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readLine reads the next line, with its newline, from br: a slice of br's
// buffer, valid until the next read, or of *long for a line longer than
// the buffer.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	*long = append((*long)[:0], line...)
	for {
		line, err = br.ReadSlice('\n')
		*long = append(*long, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return *long, err
		}
	}
}
