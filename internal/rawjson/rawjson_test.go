package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestObject(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // key=value, in order
	}{
		{"empty", ` { } `, nil},
		{"members", `{"a":1,"b":"x\"}","c":{"d":[1,{"e":"]"}]},"f":null,"g":true}`,
			[]string{`a=1`, `b="x\"}"`, `c={"d":[1,{"e":"]"}]}`, `f=null`, `g=true`}},
		{"white space", "{\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : -1.5e3 }", []string{`a=[ 1 , 2 ]`, `b=-1.5e3`}},
		{"escaped key", `{"\u0074ext":"v","a\\":0}`, []string{`text="v"`, `a\=0`}},
		{"backslashes before a quote", `{"a":"\\\\","b":"\\\"x"}`, []string{`a="\\\\"`, `b="\\\"x"`}},
		{"duplicates kept", `{"a":1,"a":2}`, []string{`a=1`, `a=2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := Object([]byte(tt.in), func(k string, v []byte) error {
				got = append(got, k+"="+string(v))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("members:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestMalformedInputIsAnError(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":"x}`,
		`{"a":[1}`, `{"a":{]}`, `{"a":[[1]}`, `{} x`, `{"a":1}}`, `{1:2}`,
	} {
		err := Object([]byte(in), func(string, []byte) error { return nil })
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Object(%q) = %v, want ErrSyntax", in, err)
		}
	}
	for _, in := range []string{``, `{}`, `[`, `[1,]`, `[,1]`, `[1 2]`, `[1]]`, `[{"a":1]`} {
		err := Array([]byte(in), func([]byte) error { return nil })
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Array(%q) = %v, want ErrSyntax", in, err)
		}
	}
}

func TestCallbackErrorStopsTheWalk(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Array([]byte(`[1,2,3]`), func([]byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("err %v after %d elements, want stop after 1", err, n)
	}
}

// FuzzWalk checks Object and Array against encoding/json on valid input,
// and that nothing panics or reads out of bounds on any input.
func FuzzWalk(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi\n\"there\""}],"isError":true}`,
		`[1,"a",{"b":[null,false]},[[]]]`, `{"\u00e9":"\\"}`, `{"a":{"b":{"c":[1e5,-0.5]}}}`, `{`, `[}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var members []string
		objErr := Object(data, func(k string, v []byte) error {
			members = append(members, k)
			if json.Valid(data) && !json.Valid(v) {
				t.Fatalf("member %q of valid %s is %s, not valid JSON", k, data, v)
			}
			return nil
		})
		var elems [][]byte
		arrErr := Array(data, func(v []byte) error { elems = append(elems, v); return nil })
		if !json.Valid(data) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil && obj != nil {
			if objErr != nil {
				t.Fatalf("Object(%s): %v", data, objErr)
			}
			seen := map[string]bool{}
			for _, k := range members {
				seen[k] = true
			}
			if len(seen) != len(obj) {
				t.Fatalf("Object(%s) gave keys %q, encoding/json %d", data, members, len(obj))
			}
		}
		var arr []json.RawMessage
		if json.Unmarshal(data, &arr) == nil && arr != nil {
			if arrErr != nil {
				t.Fatalf("Array(%s): %v", data, arrErr)
			}
			if len(elems) != len(arr) {
				t.Fatalf("Array(%s) gave %d elements, encoding/json %d", data, len(elems), len(arr))
			}
			for i := range arr {
				if !bytes.Equal(compact(t, elems[i]), compact(t, arr[i])) {
					t.Fatalf("element %d of %s: %s, encoding/json %s", i, data, elems[i], arr[i])
				}
			}
		}
	})
}

func compact(t *testing.T, v []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("compact %s: %v", v, err)
	}
	return b.Bytes()
}

// TestWalkingACallAllocatesNoNames: the member names of a tools/call and
// of its result are not allocated (memberName).
func TestWalkingACallAllocatesNoNames(t *testing.T) {
	msgs := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__echo","arguments":{},"_meta":{"progressToken":1}}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{},"isError":false}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"m","data":null}}`),
	}
	var walk func(b []byte) error
	walk = func(b []byte) error {
		return Object(b, func(_ string, v []byte) error {
			if len(v) > 0 && v[0] == '{' {
				return walk(v)
			}
			return nil
		})
	}
	for _, m := range msgs {
		if n := testing.AllocsPerRun(100, func() {
			if err := walk(m); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("walking %s: %v allocations, want 0", m, n)
		}
	}
}
