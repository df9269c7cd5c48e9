package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// transports runs fn against a standard fixture over stdio and over
// streamable HTTP.
func transports(t *testing.T, fn func(t *testing.T, f *fixture, c *client.Client)) {
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		f := standardFixture(t, "stdio")
		fn(t, f, connectStdio(t, f))
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		f := standardFixture(t, testkit.FreeAddr(t))
		url, _ := startHTTP(t, f)
		fn(t, f, connectHTTP(t, url))
	})
}

func TestToolsListShowsWireNamesAndHidesDeniedTools(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, _ *fixture, c *client.Client) {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		for _, want := range []string{"everything__echo", "fs__read_text_file", "fs__write_file", "fs__edit_file", "fs__list_allowed_directories"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s; got %v", want, names)
			}
		}
		if slices.Contains(names, "fs__move_file") {
			t.Errorf("tools/list shows fs__move_file, which an unconditional deny hides")
		}
		for _, tool := range res.Tools {
			if tool.Name == "fs__read_text_file" && len(tool.InputSchema.Properties) == 0 {
				t.Errorf("fs__read_text_file lost its input schema: %+v", tool.InputSchema)
			}
		}
	})
}

func TestAllowedCallsReachTheUpstream(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, f *fixture, c *client.Client) {
		res := callTool(t, c, "everything__echo", map[string]any{"message": "hello through the warden"})
		if res.IsError || !strings.Contains(testkit.Text(res), "hello through the warden") {
			t.Errorf("echo = %+v, want its message back", res)
		}

		file := filepath.Join(f.sandbox, "notes.txt")
		if err := os.WriteFile(file, []byte("line one\nline two\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		res = callTool(t, c, "fs__read_text_file", map[string]any{"path": file})
		if res.IsError || testkit.Text(res) != "line one\nline two\n" {
			t.Errorf("read_text_file = %q (isError %v), want the file's content", testkit.Text(res), res.IsError)
		}
		if res.StructuredContent == nil {
			t.Errorf("read_text_file lost structuredContent on the way through")
		}

		decisions := readAudit(t, f.auditPath, "decision")
		if len(decisions) != 2 {
			t.Fatalf("audit has %d decision events, want 2: %+v", len(decisions), decisions)
		}
		want := []auditEvent{
			{Event: "decision", Tool: "mcp:everything:echo", WireName: "everything__echo", Server: "everything", Decision: "allow", Rule: "mcp:everything:echo", GrantedBy: "rule"},
			{Event: "decision", Tool: "mcp:fs:read_text_file", WireName: "fs__read_text_file", Server: "fs", Decision: "allow", Rule: "mcp:fs:read_*:path=" + f.sandbox + "/**", GrantedBy: "rule"},
		}
		for i, w := range want {
			got := decisions[i]
			if got.Tool != w.Tool || got.WireName != w.WireName || got.Server != w.Server || got.Decision != w.Decision || got.Rule != w.Rule || got.GrantedBy != w.GrantedBy {
				t.Errorf("decision event %d = %+v, want %+v", i, got, w)
			}
		}
		if decisions[1].Arguments["path"] != file {
			t.Errorf("decision event arguments = %v, want path %s", decisions[1].Arguments, file)
		}
		results := readAudit(t, f.auditPath, "result")
		if len(results) != 2 || results[1].Bytes == nil || *results[1].Bytes <= int64(len("line one\nline two\n")) {
			t.Fatalf("audit result events = %+v, want 2 with sizes", results)
		}
		// The preview is the start of the first text item, redacted: a
		// multi-line value is cut to its first line.
		if !strings.Contains(results[0].Preview, "hello through the warden") || !strings.HasPrefix(results[1].Preview, "line one <redacted") {
			t.Errorf("result previews = %q, %q", results[0].Preview, results[1].Preview)
		}
	})
}

func TestDeniedWriteIsNotForwarded(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, f *fixture, c *client.Client) {
		protected := filepath.Join(f.sandbox, "protected")
		if err := os.Mkdir(protected, 0o755); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(protected, "owned.txt")
		rule := "mcp:fs:write_file:path=" + f.sandbox + "/protected/**"

		// The deny rule matches after normalisation too: a traversal through
		// an allowed directory does not escape it.
		for _, path := range []string{target, filepath.Join(f.sandbox, "x", "..", "protected", "owned.txt")} {
			res := callTool(t, c, "fs__write_file", map[string]any{"path": path, "content": "pwned"})
			if !res.IsError {
				t.Fatalf("write_file to %s was not refused: %+v", path, res)
			}
			text := testkit.Text(res)
			if !strings.Contains(text, "mcp:fs:write_file") || !strings.Contains(text, rule) {
				t.Errorf("denial %q does not name the tool and the rule %q", text, rule)
			}
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("the denied write created %s (stat err %v)", target, err)
		}

		// An allowed write next to it goes through, so the deny is what stopped it.
		ok := filepath.Join(f.sandbox, "ok.txt")
		if res := callTool(t, c, "fs__write_file", map[string]any{"path": ok, "content": "fine"}); res.IsError {
			t.Fatalf("allowed write_file failed: %s", testkit.Text(res))
		}
		if data, err := os.ReadFile(ok); err != nil || string(data) != "fine" {
			t.Errorf("allowed write wrote %q, %v", data, err)
		}

		decisions := readAudit(t, f.auditPath, "decision")
		var got []string
		for _, d := range decisions {
			got = append(got, d.Decision+" "+d.Rule)
		}
		want := []string{"deny " + rule, "deny " + rule, "allow mcp:fs:write_file"}
		if !slices.Equal(got, want) {
			t.Errorf("audit decisions = %q, want %q", got, want)
		}
		if n := len(readAudit(t, f.auditPath, "result")); n != 1 {
			t.Errorf("audit has %d result events, want 1 (only the allowed call was forwarded)", n)
		}
	})
}

func TestHiddenToolCannotBeCalledByGuessingItsName(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, "stdio")
	c := connectStdio(t, f)
	src := filepath.Join(f.sandbox, "src.txt")
	if err := os.WriteFile(src, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(f.sandbox, "dst.txt")
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "fs__move_file", Arguments: map[string]any{"source": src, "destination": dst},
	}})
	if err == nil && !res.IsError {
		t.Fatalf("calling hidden fs__move_file succeeded: %+v", res)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("the hidden tool moved the file")
	}
	d := readAudit(t, f.auditPath, "decision")
	if len(d) != 1 || d[0].Decision != "deny" || d[0].Rule != "mcp:fs:move_file" {
		t.Errorf("audit decisions = %+v, want one deny by mcp:fs:move_file", d)
	}
}

func TestFailingUpstreamIsNamedAndOthersStillWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio",
		"  everything:\n"+serverEverything()+"\n  broken:\n    command: node\n    args: [-e, \"console.error('cannot open database'); process.exit(3)\"]",
		"  allow: [\"mcp:everything:echo\"]")
	stderr := &testkit.LockedBuffer{}
	c := connectStdioWithStderr(t, f, stderr)
	res := callTool(t, c, "everything__echo", map[string]any{"message": "still here"})
	if res.IsError || !strings.Contains(testkit.Text(res), "still here") {
		t.Errorf("echo with a broken sibling = %+v", res)
	}
	log := stderr.String()
	if !strings.Contains(log, `upstream \"broken\"`) && !strings.Contains(log, `upstream "broken"`) {
		t.Errorf("stderr does not name the broken server:\n%s", log)
	}
	if !strings.Contains(log, "cannot open database") {
		t.Errorf("stderr does not show why the broken server failed:\n%s", log)
	}
}

// TestInspectorCLIThroughTheProxy drives the pinned MCP Inspector's CLI
// (2.x, run by the pinned Node its engines field asks for) against
// mcpwarden over streamable HTTP, as the README's quickstart shows.
func TestInspectorCLIThroughTheProxy(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, testkit.FreeAddr(t))
	url, _ := startHTTP(t, f)
	inspector := filepath.Join(npmBin, "mcp-inspector")
	// run runs the CLI and returns its output and whether it failed: 2.x
	// exits non-zero for a result with isError, so a refusal fails it.
	run := func(args ...string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", url, "--transport", "http"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+npmBin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out), err != nil
	}
	if version, _ := run("--version"); !strings.HasPrefix(strings.TrimSpace(version), "2.") {
		t.Errorf("the pinned inspector is %q, want 2.x", strings.TrimSpace(version))
	}
	list, failed := run("--method", "tools/list")
	if failed || !strings.Contains(list, `"everything__echo"`) || !strings.Contains(list, `"fs__read_text_file"`) {
		t.Errorf("inspector tools/list (failed %v) lacks the wire names:\n%s", failed, list)
	}
	if strings.Contains(list, `"fs__move_file"`) {
		t.Errorf("inspector tools/list shows the hidden fs__move_file")
	}
	echo, failed := run("--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=from the inspector")
	if failed || !strings.Contains(echo, "from the inspector") {
		t.Errorf("inspector echo (failed %v) did not return its message:\n%s", failed, echo)
	}
	denied, failed := run("--method", "tools/call", "--tool-name", "fs__write_file", "--tool-arg", "path="+f.sandbox+"/protected/x", "content=x")
	if !failed || !strings.Contains(denied, `"isError": true`) || !strings.Contains(denied, "mcp:fs:write_file") {
		t.Errorf("inspector denied write (failed %v) did not come back as isError naming the tool:\n%s", failed, denied)
	}
	if _, err := os.Stat(filepath.Join(f.sandbox, "protected", "x")); err == nil {
		t.Error("the denied write reached the server")
	}
}

func TestSymlinkDoesNotEscapeAllow(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, "stdio")
	outside := filepath.Join(f.dir, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.sandbox, "link")); err != nil {
		t.Fatal(err)
	}
	c := connectStdio(t, f)
	res := callTool(t, c, "fs__read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "link", "secret.txt")})
	if !res.IsError || strings.Contains(testkit.Text(res), "top secret") {
		t.Fatalf("a read through a symlink out of the allowed directory = %q", testkit.Text(res))
	}
	d := readAudit(t, f.auditPath, "decision")
	if len(d) != 1 || d[0].Decision != "deny" {
		t.Errorf("audit = %+v, want the read denied by mcpwarden itself (default deny once the link is followed)", d)
	}
}
