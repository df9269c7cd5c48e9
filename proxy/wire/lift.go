package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/mcpwarden/mcpwarden/internal/rawjson"
)

// LiftMin is the size from which the arguments of a tools/call are lifted
// out of its message before mcp-go decodes it. Smaller ones cost little to
// copy and are left in place.
const LiftMin = 64 << 10

// LiftPrefix and LiftSuffix enclose the token of the placeholder that
// takes the place of lifted arguments in the message mcp-go decodes.
const (
	LiftPrefix = `{"mcpwarden.Lifted":"`
	LiftSuffix = `"}`
)

// Lifting the arguments out of a large tools/call message is how
// mcpwarden avoids the copies mcp-go makes of them: decoding a message,
// mcp-go copies the params, copies the arguments twice more (as
// json.RawMessage and as RawArguments) and decodes them into a map. mcpwarden reads and checks the arguments itself
// (jsonargs), so mcp-go gets the message with a small placeholder in their
// place, and the handler takes the arguments — a sub-slice of the bytes
// read, counted in the in-flight budget from when they were read — by the
// placeholder's token. The token is random and looked up only in the set
// of the request (HTTP) or the connection (stdio) the message came in, so
// a client can reach only its own arguments; a placeholder whose token is
// not there is an ordinary argument object. mcp-go still decides
// everything else about the message (method, tool name, _meta), since
// lifting changes nothing but the arguments' bytes, and only where no
// other member could be read as "method", "params" or "arguments".
type Lifted struct {
	Raw  []byte // the arguments as received; nil when Err is set
	Hold *Hold  // the bytes counted for them, over stdio; nil over HTTP (the body is counted)
	Err  error  // why they were dropped: they did not fit the budget
}

// Release gives back what the lifted arguments hold. It may be called on
// a nil *Lifted.
func (l *Lifted) Release() {
	if l != nil {
		l.Hold.Release()
	}
}

// A LiftedSet holds the arguments lifted from the messages of one HTTP
// request or one stdio connection until their handlers take them; one no
// handler takes (a message mcp-go refused, a tool that went away, a
// connection that ended with calls queued) is released with the set.
type LiftedSet = TokenSet[*Lifted]

// liftPlaceholder is the arguments object that names lifted arguments by
// their token.
func liftPlaceholder(token string) []byte { return []byte(LiftPrefix + token + LiftSuffix) }

type liftedSetKey struct{}

func withLiftedSet(ctx context.Context, s *LiftedSet) context.Context {
	return context.WithValue(ctx, liftedSetKey{}, s)
}

// TakeLifted returns the arguments that the placeholder raw names in the
// set of ctx, or nil when raw is not a placeholder of that set.
func TakeLifted(ctx context.Context, raw []byte) *Lifted {
	s, _ := ctx.Value(liftedSetKey{}).(*LiftedSet)
	if s == nil || len(raw) > 64 || !bytes.HasPrefix(raw, []byte(LiftPrefix)) || !bytes.HasSuffix(raw, []byte(LiftSuffix)) {
		return nil
	}
	return s.Take(string(raw[len(LiftPrefix) : len(raw)-len(LiftSuffix)]))
}

// errNotLiftable stops the walk of a message that is left as it is.
var errNotLiftable = errors.New("not liftable")

// liftSpan finds the arguments of msg when it is a single tools/call
// request whose arguments are a JSON object of at least LiftMin bytes,
// and returns where they start and end in msg and the tool's name. A
// message with a non-ASCII member name, or with two members that
// encoding/json could read as one of "method", "params" or "arguments"
// (it matches names without regard to case), is not lifted.
func liftSpan(msg []byte) (start, end int, name string, ok bool) {
	var method, params []byte
	err := rawjson.Object(msg, func(key string, v []byte) error {
		switch {
		case !plainName(key):
			return errNotLiftable
		case key == "method" && method == nil:
			method = v
		case key == "params" && params == nil:
			params = v
		case equalFoldASCII(key, "method") || equalFoldASCII(key, "params"):
			return errNotLiftable
		}
		return nil
	})
	var m string
	if err != nil || params == nil || json.Unmarshal(method, &m) != nil || m != "tools/call" {
		return 0, 0, "", false
	}
	var args []byte
	err = rawjson.Object(params, func(key string, v []byte) error {
		switch {
		case !plainName(key):
			return errNotLiftable
		case key == "arguments" && args == nil:
			args = v
		case key == "name" && name == "":
			return json.Unmarshal(v, &name)
		case equalFoldASCII(key, "arguments") || equalFoldASCII(key, "name"):
			return errNotLiftable
		}
		return nil
	})
	if err != nil || len(args) < LiftMin || args[0] != '{' {
		return 0, 0, "", false
	}
	// args is a sub-slice of msg, so its capacity says where it starts.
	start = cap(msg) - cap(args)
	return start, start + len(args), name, true
}

// lift returns msg with the arguments at msg[start:end] replaced by
// placeholder.
func lift(msg []byte, start, end int, placeholder []byte) []byte {
	out := make([]byte, 0, len(msg)-(end-start)+len(placeholder))
	out = append(out, msg[:start]...)
	out = append(out, placeholder...)
	return append(out, msg[end:]...)
}

// plainName reports whether a member name is printable ASCII.
func plainName(key string) bool {
	for i := range len(key) {
		if key[i] < 0x20 || key[i] >= 0x7f {
			return false
		}
	}
	return true
}

// equalFoldASCII reports whether a and b are equal ignoring ASCII case.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y || (x < 'a' || x > 'z') && a[i] != b[i] {
			return false
		}
	}
	return true
}

// A StdinLifter reads the lines of a stdio connection: each as received,
// except that a tools/call of a known tool with large arguments has them
// lifted out (see Lifted) and counted in the in-flight budget from the
// moment the line is read. Arguments that do not fit are dropped at once
// and the call is refused when its handler runs. A line is read whole, as
// mcp-go decodes it whole.
type StdinLifter struct {
	r      *bufio.Reader
	budget *Budget
	known  func(wire string) bool
	set    *LiftedSet
}

// NewStdinLifter returns a lifter of the lines of in; known reports
// whether a wire name is a tool that the server has.
func NewStdinLifter(in io.Reader, budget *Budget, known func(string) bool) *StdinLifter {
	return &StdinLifter{r: bufio.NewReaderSize(in, 64<<10), budget: budget, known: known, set: &LiftedSet{}}
}

// WithSet returns ctx carrying the set of the arguments l lifts, where
// TakeLifted finds them.
func (l *StdinLifter) WithSet(ctx context.Context) context.Context { return withLiftedSet(ctx, l.set) }

// ReleaseLifted releases the arguments l lifted that no handler took.
func (l *StdinLifter) ReleaseLifted() { l.set.ReleaseAll() }

// ReadLine returns the next line, with its newline, its arguments lifted
// out if it is a call they can be lifted from. At the end of the input it
// returns io.EOF and no line: a last line without a newline is dropped.
func (l *StdinLifter) ReadLine() ([]byte, error) {
	line, err := l.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	return l.liftLine(line), nil
}

// liftLine returns line with its arguments lifted out when it is a
// tools/call they can be lifted from.
func (l *StdinLifter) liftLine(line []byte) []byte {
	if len(line) < LiftMin {
		return line
	}
	start, end, name, ok := liftSpan(line)
	if !ok || !l.known(name) {
		return line
	}
	entry := &Lifted{Raw: line[start:end:end]}
	if entry.Hold, entry.Err = l.budget.Admit(int64(end-start), "its arguments"); entry.Err != nil {
		entry.Raw = nil
	}
	return lift(line, start, end, liftPlaceholder(l.set.Put(entry)))
}
