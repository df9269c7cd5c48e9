package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// bigArgs is a tools/call arguments object of at least LiftMin bytes with
// the given path, in its canonical form (keys sorted), as proxy's tests
// build it.
func bigArgs(path string) string {
	return fmt.Sprintf(`{"content":%q,"path":%q}`, strings.Repeat("z", LiftMin), path)
}

func TestLiftSpan(t *testing.T) {
	t.Parallel()
	args := bigArgs("/tmp/a")
	tests := []struct {
		name string
		msg  string
		want bool
	}{
		{"a tools/call with large arguments is lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `}}`, true},
		{"members in another order are found", `{"params":{"arguments":` + args + `,"name":"up__write"},"id":"x","method":"tools/call","jsonrpc":"2.0"}`, true},
		{"small arguments are left in place", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":{"path":"/tmp/a"}}}`, false},
		{"another method is left alone", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":` + args + `}}`, false},
		{"arguments that are not an object are left alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":["` + strings.Repeat("z", LiftMin) + `"]}}`, false},
		{"a second method member read as one by encoding/json is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"up__write","arguments":` + args + `}}`, false},
		{"a second params member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `},"PARAMS":{"name":"up__echo"}}`, false},
		{"a second arguments member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"Arguments":{"path":"/etc/passwd"}}}`, false},
		{"a duplicate arguments member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"arguments":{"path":"/etc/passwd"}}}`, false},
		{"a non-ASCII member name (a Kelvin sign) is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"tas\u212a":{}}}`, false},
		{"an escaped member name is read as encoding/json reads it", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","\u0061rguments":` + args + `}}`, true},
		{"a batch is left alone", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `}}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := []byte(tt.msg)
			start, end, name, ok := liftSpan(msg)
			if ok != tt.want {
				t.Fatalf("lifted = %v, want %v", ok, tt.want)
			}
			if ok && (string(msg[start:end]) != args || name != "up__write") {
				t.Errorf("lifted %q of %q, want the arguments of up__write", msg[start:end][:20], name)
			}
		})
	}
}

// FuzzLiftKeepsTheMessage checks that lifting changes nothing but the
// arguments: encoding/json (as mcp-go decodes a message) reads the
// placeholder exactly where it read the arguments, and the same method,
// tool name and id.
func FuzzLiftKeepsTheMessage(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":{"path":"/tmp/a"}}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","\u0061rguments":{"path":"/tmp/a"},"_meta":{"arguments":{}}}}`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"p":"/tmp/a"},"name":"x","Name":"y"}}`)
	type message struct {
		ID     json.RawMessage
		Method string
		Params struct {
			Name      string
			Arguments json.RawMessage
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		msg := []byte(s)
		if len(msg) < LiftMin {
			msg = bytes.Replace(msg, []byte(`"/tmp/a"`), []byte(fmt.Sprintf("%q", strings.Repeat("z", LiftMin))), 1)
		}
		start, end, name, ok := liftSpan(msg)
		if !ok {
			return
		}
		var before message
		if json.Unmarshal(msg, &before) != nil {
			return // mcp-go refuses it as it is, and refuses it lifted
		}
		placeholder := []byte(LiftPrefix + "TOKEN" + LiftSuffix)
		var after message
		if err := json.Unmarshal(lift(msg, start, end, placeholder), &after); err != nil {
			t.Fatalf("the lifted message does not decode: %v", err)
		}
		if !bytes.Equal(before.Params.Arguments, msg[start:end]) {
			t.Errorf("lifted %q, but encoding/json reads the arguments as %q", msg[start:end], before.Params.Arguments)
		}
		if !bytes.Equal(after.Params.Arguments, placeholder) {
			t.Errorf("encoding/json reads the lifted message's arguments as %q, not the placeholder", after.Params.Arguments)
		}
		if after.Method != before.Method || after.Params.Name != before.Params.Name || name != before.Params.Name || !bytes.Equal(after.ID, before.ID) {
			t.Errorf("lifting changed the message: %+v, then %+v (name %q)", before, after, name)
		}
	})
}

// FuzzStreamWriterReplacesOnlyItsPlaceholders checks that the writer of a
// connection passes every message through unchanged except for the
// placeholders of its own set, each replaced by its items once.
func FuzzStreamWriterReplacesOnlyItsPlaceholders(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"content":[PLACEHOLDER]}}`, `{"type":"text","text":"hi"}`)
	f.Add(`{"text":"mcpwarden.result:AAAAAAAAAAAAAAAAAAAAAAAAAA","x":[PLACEHOLDER]}`, `1`)
	f.Add(`"mcpwarden.result:`+`"mcpwarden.result:PLACEHOLDER`, ``)
	f.Fuzz(func(t *testing.T, msg, item string) {
		set := &StreamSet{}
		token := set.Put(&streamedResult{items: [][]byte{[]byte(item), []byte(item)}})
		placeholder := StreamPrefix + token + `"`
		in := strings.ReplaceAll(msg, "PLACEHOLDER", placeholder)
		var out bytes.Buffer
		if _, err := NewStreamWriter(&out, set).Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(in, placeholder, item+","+item, 1)
		if out.String() != want {
			t.Errorf("wrote %q for %q, want %q", out.String(), in, want)
		}
	})
}

func TestInflightBudgetCountsAndReleases(t *testing.T) {
	t.Parallel()
	b := NewBudget(100)
	h1, err := b.Admit(60, "its arguments")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admit(41, "its arguments"); !errors.Is(err, ErrInflightFull) {
		t.Errorf("admit over the bound: got %v, want ErrInflightFull", err)
	}
	h2, err := b.Admit(40, "its arguments")
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Add(1, "its result"); !errors.Is(err, ErrInflightFull) {
		t.Errorf("add over the bound: got %v, want ErrInflightFull", err)
	}
	h1.Release()
	h1.Release() // idempotent
	if err := h2.Add(60, "its result"); err != nil {
		t.Errorf("add after a release: %v", err)
	}
	h2.Release()
	var none *Hold
	none.Release()
	if err := none.Add(5, "x"); err != nil {
		t.Errorf("add on a nil hold: %v", err)
	}
	if got := b.InUse(); got != 0 {
		t.Errorf("inUse = %d after every release, want 0", got)
	}
	if got := NewBudget(0).max; got != DefaultMaxInflightBytes {
		t.Errorf("default bound = %d, want %d", got, DefaultMaxInflightBytes)
	}
}
