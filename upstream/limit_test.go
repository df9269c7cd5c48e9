package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// readLines reads r the way mcp-go's stdio transport does.
func readLines(t *testing.T, r io.Reader) []string {
	t.Helper()
	br := bufio.NewReader(r)
	var lines []string
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			lines = append(lines, line)
		}
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestLineLimiterReplacesAnOversizeResponse(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 500)
	tests := []struct {
		name   string
		line   string
		wantID string // "" when no replacement is expected
	}{
		{"id first, as Go servers write it", `{"jsonrpc":"2.0","id":7,"result":{"text":"` + big + `"}}`, `"id":7,`},
		{"id last, as TypeScript servers write it", `{"result":{"text":"` + big + `","id":99},"jsonrpc":"2.0","id":12}`, `"id":12,`},
		{"string id and escapes", `{"result":{"text":"\"id\":5 \\` + big + `"},"id":"a\"b"}`, `"id":"a\"b",`},
		{"a request from the server gets no reply", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`, ""},
		{"a notification gets no reply", `{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"` + big + `"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.line + "\n" + `{"jsonrpc":"2.0","id":8,"result":{}}` + "\n"
			lines := readLines(t, newLineLimiter(strings.NewReader(in), 100, false, nil))
			for _, l := range lines {
				if len(l) > 101 && !strings.Contains(l, tooLargeMarker) {
					t.Errorf("a line of %d bytes passed a limit of 100", len(l))
				}
			}
			want := 3
			if tt.wantID == "" {
				want = 2
			}
			if len(lines) != want {
				t.Fatalf("got %d lines, want %d: %q", len(lines), want, lines)
			}
			if tt.wantID != "" && (!strings.Contains(lines[1], tt.wantID) || !strings.Contains(lines[1], tooLargeMarker)) {
				t.Errorf("replacement %q lacks %s", lines[1], tt.wantID)
			}
			if got := lines[len(lines)-1]; got != `{"jsonrpc":"2.0","id":8,"result":{}}`+"\n" {
				t.Errorf("next message = %q", got)
			}
		})
	}
}

// An endless line never makes a line longer than the limit.
func TestLineLimiterBoundsAnEndlessLine(t *testing.T) {
	t.Parallel()
	endless := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":"`), io.LimitReader(repeatReader('x'), 64<<20))
	br := bufio.NewReader(newLineLimiter(endless, 1<<20, false, nil))
	line, err := br.ReadString('\n')
	if err != nil || len(line) > 1<<20+1 {
		t.Fatalf("first line: %d bytes, %v", len(line), err)
	}
	if rest, _ := io.Copy(io.Discard, br); rest != 0 {
		t.Errorf("%d bytes of the cut line passed", rest)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestCappedReaderFailsPastTheCap(t *testing.T) {
	t.Parallel()
	r := &cappedReader{r: strings.NewReader(strings.Repeat("x", 101)), left: 100, max: 100}
	if _, err := io.ReadAll(r); !errors.Is(err, ErrResultTooLarge) {
		t.Errorf("101 bytes past a cap of 100: %v", err)
	}
	r = &cappedReader{r: strings.NewReader(strings.Repeat("x", 100)), left: 100, max: 100}
	if b, err := io.ReadAll(r); err != nil || len(b) != 100 {
		t.Errorf("100 bytes under a cap of 100: %d, %v", len(b), err)
	}
}

func TestLineLimiterStashesExpectedResults(t *testing.T) {
	t.Parallel()
	stash := newResultStash()
	stash.expect("7")
	stash.expect(`"s"`)
	stash.expect("9")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"seven"}]}}`,
		`{"result":{"content":[]},"jsonrpc":"2.0","id":"s"}`,
		`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"not expected"}]}}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"failed"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}`,
	}, "\n") + "\n"
	lines := readLines(t, newLineLimiter(strings.NewReader(in), 1<<10, false, stash))
	want := []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"s","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"not expected"}]}}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"failed"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}`,
	}
	if strings.Join(lines, "") != strings.Join(want, "\n")+"\n" {
		t.Errorf("lines passed on:\n%s\nwant:\n%s", strings.Join(lines, ""), strings.Join(want, "\n"))
	}
	if got, ok := stash.take("7"); !ok || string(got) != `{"content":[{"type":"text","text":"seven"}]}` {
		t.Errorf("stash for 7 = %s, %v", got, ok)
	}
	if got, ok := stash.take(`"s"`); !ok || string(got) != `{"content":[]}` {
		t.Errorf(`stash for "s" = %s, %v`, got, ok)
	}
	if _, ok := stash.take("9"); ok {
		t.Error("an error response's id has a result in the stash")
	}
	// A result that comes after its call forgot it is passed on, not kept.
	stash.expect("10")
	stash.forget("10")
	lines = readLines(t, newLineLimiter(strings.NewReader(`{"jsonrpc":"2.0","id":10,"result":{}}`+"\n"), 1<<10, false, stash))
	if len(lines) != 1 || !strings.Contains(lines[0], `"result":{}`) || len(stash.waiting) != 0 {
		t.Errorf("late result: lines %q, stash %v", lines, stash.waiting)
	}
	// An oversize response is replaced by the error, and nothing is kept.
	stash.expect("11")
	lines = readLines(t, newLineLimiter(strings.NewReader(`{"jsonrpc":"2.0","id":11,"result":{"t":"`+strings.Repeat("x", 2000)+`"}}`+"\n"), 1<<10, false, stash))
	if len(lines) != 1 || !strings.Contains(lines[0], tooLargeMarker) || !strings.Contains(lines[0], `"id":11`) {
		t.Errorf("oversize response passed on as %q", lines)
	}
	if _, ok := stash.take("11"); ok {
		t.Error("an oversize result was kept")
	}
}

func TestLimitTransportTakesTheResultOfTheCallItWasAskedFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		wantBody   string // "" when the body is passed on as it came
		wantResult string
	}{
		{"the call's result", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"seven"}]}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, `{"content":[{"type":"text","text":"seven"}]}`},
		{"another request's answer", `{"jsonrpc":"2.0","id":8,"result":{"protocolVersion":"2025-11-25"}}`, "", ""},
		{"an error", `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"failed"}}`, "", ""},
		{"not JSON-RPC", `[1,2]`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			var dst json.RawMessage
			ctx := context.WithValue(t.Context(), rawCallKey{}, &rawCall{id: "7", dst: &dst})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&limitTransport{base: http.DefaultTransport, max: 1 << 20}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := tt.wantBody
			if want == "" {
				want = tt.body
			}
			if string(body) != want || string(dst) != tt.wantResult {
				t.Errorf("body %s, result %s; want %s, %s", body, dst, want, tt.wantResult)
			}
		})
	}
}

func TestLargeResultIsNotCopiedOverAndOverWhileRead(t *testing.T) {
	// Not parallel: it counts the bytes the process allocates.
	// A 50 MiB result refused by the in-flight bound cost about four times
	// its size: the held line grew by append, a quarter at a time.
	const size = 8 << 20
	line := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}]}}` + "\n"
	stash := newResultStash()
	stash.expect("7")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	readLines(t, newLineLimiter(strings.NewReader(line), 32<<20, false, stash))
	runtime.ReadMemStats(&after)
	if got, ok := stash.take("7"); !ok || len(got) < size {
		t.Fatalf("the result was not stashed whole: %d bytes", len(got))
	}
	// The blocks it is read in (the last one part full) and the line put
	// together from them: under 3 sizes, where growing by append took 5.
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 3*size {
		t.Errorf("reading a %d MiB result allocated %d MiB, want under %d MiB", size>>20, allocated>>20, 3*size>>20)
	}
}
