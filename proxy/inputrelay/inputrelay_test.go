package inputrelay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    []string // method of each request, by id order
		wantErr string
	}{
		{"an elicitation and the roots", `{"resultType":"input_required","inputRequests":{"b":{"method":"roots/list"},"a":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"s"}`, []string{"elicitation/create", "roots/list"}, ""},
		{"no requests: load shedding", `{"resultType":"input_required","requestState":"s"}`, nil, ""},
		{"a method that cannot be asked", `{"inputRequests":{"a":{"method":"tools/call","params":{}}}}`, nil, "only elicitation/create"},
		{"an elicitation without params", `{"inputRequests":{"a":{"method":"elicitation/create"}}}`, nil, "no params object"},
		{"a sampling request whose params are not an object", `{"inputRequests":{"a":{"method":"sampling/createMessage","params":[1]}}}`, nil, "no params object"},
		{"not JSON", `{`, nil, "reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range r.Requests {
				got = append(got, string(q.Method))
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || r.RequestState != "s" {
				t.Errorf("Parse = %+v, want methods %v and the state kept", r, tt.want)
			}
		})
	}
}

func TestWithMessagePrefixKeepsEveryOtherMember(t *testing.T) {
	t.Parallel()
	got, err := WithMessagePrefix(json.RawMessage(`{"message":"go?","requestedSchema":{"type":"object"},"x-extra":1}`), "[up] ")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m["message"] != "[up] go?" || m["x-extra"] != float64(1) || m["requestedSchema"] == nil {
		t.Errorf("WithMessagePrefix = %s", got)
	}
	if _, err := WithMessagePrefix(json.RawMessage(`{"message":7}`), "[up] "); err == nil {
		t.Error("a message that is not a string was taken")
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	p := &Pending{Relayed: []string{"a"}, Answered: map[string]json.RawMessage{"r": json.RawMessage(`{"roots":[]}`)}}
	var responses mcp.InputResponses
	if err := json.Unmarshal([]byte(`{"upstream:a":{"action":"accept","content":{"x":1}},"upstream:zz":{"action":"accept"},"r":{"roots":[{"uri":"file:///etc"}]}}`), &responses); err != nil {
		t.Fatal(err)
	}
	got, err := Answers(p, responses)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["r"]) != `{"roots":[]}` || !strings.Contains(string(got["a"]), `"accept"`) {
		t.Errorf("Answers = %s, want the client's answer to a and mcpwarden's own roots, nothing else", got)
	}
	if _, err := Answers(p, mcp.InputResponses{}); !errors.Is(err, ErrUnanswered) {
		t.Errorf("an unanswered request: err = %v, want ErrUnanswered", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"s"}`))
	f.Add([]byte(`{"inputRequests":{"r":{"method":"roots/list","params":7}}}`))
	f.Add([]byte(`{"inputRequests":{"s":{"method":"sampling/createMessage","params":{"messages":[]}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := Parse(raw)
		if err != nil {
			return
		}
		for _, q := range r.Requests {
			switch q.Method {
			case mcp.MethodListRoots:
				if q.Params != nil {
					t.Fatalf("roots/list %q kept params", q.ID)
				}
			case mcp.MethodElicitationCreate:
				got, err := WithMessagePrefix(q.Params, "[up] ")
				if err != nil {
					continue // a message that is not a string: refused
				}
				var m struct{ Message string }
				if json.Unmarshal(got, &m) != nil || !strings.HasPrefix(m.Message, "[up] ") {
					t.Fatalf("the prefixed elicitation %s does not start with the prefix", got)
				}
			case mcp.MethodSamplingCreateMessage:
			default:
				t.Fatalf("request %q has method %q", q.ID, q.Method)
			}
		}
		// What the client is sent holds every request, or is not sent.
		if res, err := Result(r.Requests, "relay.x"); err == nil && (len(res.InputRequests) != len(r.Requests) || res.RequestState != "relay.x") {
			t.Fatalf("Result = %+v, want the %d requests under the state", res, len(r.Requests))
		}
	})
}
