package streamable

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzPostHeadIsJSONUnmarshal holds postHead.decode to json.Unmarshal on
// any bytes: the head, and the protocol version in params._meta.
func FuzzPostHeadIsJSONUnmarshal(f *testing.F) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"protocolVersion":"2025-06-18"}}}`,
		`{"method":"m","params":{"_meta":{"progressToken":1},"_meta":null},"PARAMS":{"_Meta":{"x":[]}}}`,
		`{"method":"m","params":{"_meta":"x"}}`,
		`{"method":"m","params":[]}`,
		`{"method":"m","params":null,"id":null}`,
		`null`, `{"id":1} 2`,
	} {
		f.Add([]byte(msg))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want, got postHead
		wantErr := json.Unmarshal(body, &want)
		if ok := got.decode(body); ok != (wantErr == nil) {
			t.Fatalf("decode says %v where json.Unmarshal fails with %v: %q", ok, wantErr, body)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decode read\n%#v\njson.Unmarshal reads\n%#v\nfrom %q", got, want, body)
		}
	})
}
