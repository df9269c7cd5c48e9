package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// metadataDocument is the client ID metadata document URL the suite
// expects from a client that uses one (as its reference clients do).
const metadataDocument = "https://conformance-test.local/client-metadata.json"

// maxLogins bounds the sign-ins of one run: the first, and the step-ups
// the server asks for (the suite's scope-retry-limit allows three).
const maxLogins = 3

// testTool is the tool the suite's auth scenarios serve.
const testTool = "test-tool"

// runAuth runs an auth/* scenario: the server's entry has an oauth block
// (the client the scenario pre-registered, from MCP_CONFORMANCE_CONTEXT,
// else the metadata document: mcpwarden registers a client itself when
// the server does not take it), it signs in with `mcpwarden login` (the
// suite's authorization server redirects at once, so following the
// printed URL with an HTTP client completes the sign-in through
// mcpwarden's loopback listener) and calls the server's test-tool through
// `mcpwarden serve`. When the call says the server wants a new login (a
// step-up of scope), or serve's log says the server is down for want of
// one (its authorization server moved), it signs in again and retries, at
// most maxLogins sign-ins in all.
func runAuth(ctx context.Context, w warden, serverURL string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	var conf struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &conf); err != nil {
			return fmt.Errorf("reading MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	oauth := fmt.Sprintf("{ client_metadata_url: %q }", metadataDocument)
	if conf.ClientID != "" {
		oauth = fmt.Sprintf("{ client_id: %q, client_secret_env: CONFORMANCE_CLIENT_SECRET }", conf.ClientID)
	}
	if err := w.writeConfig(serverURL, "oauth: "+oauth); err != nil {
		return err
	}
	w.env = append(w.env,
		"MCPWARDEN_TOKEN_KEY="+base64.StdEncoding.EncodeToString(key),
		"CONFORMANCE_CLIENT_SECRET="+conf.ClientSecret)
	logins := 1
	if err := w.login(ctx); err != nil {
		return err
	}
	c, _, err := w.serve(ctx, mcp.LATEST_PROTOCOL_VERSION)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		name, found, err := findTool(ctx, c)
		if err != nil {
			return err
		}
		if !found {
			// The server is down. When serve says it needs a new sign-in
			// (its authorization server moved, or its token went), sign
			// in again, as its operator would, and wait for serve to
			// bring it up.
			if logins >= maxLogins || !w.wantsLogin(ctx, 3*time.Second) {
				return fmt.Errorf("mcpwarden lists no %s", testTool)
			}
			log.Printf("mcpwarden says %s needs a new sign-in", serverName)
			logins++
			if err := w.login(ctx); err != nil {
				return err
			}
			if name, err = awaitTool(ctx, c); err != nil {
				return err
			}
		}
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: map[string]any{}}})
		if err != nil {
			return fmt.Errorf("calling %s through mcpwarden: %w", name, err)
		}
		text := resultText(res)
		if !res.IsError {
			log.Printf("%s answered: %s", name, text)
			return nil
		}
		if !strings.Contains(text, "mcpwarden login") || logins >= maxLogins {
			return fmt.Errorf("%s failed after %d sign-ins: %s", name, logins, text)
		}
		log.Printf("%s wants a new sign-in: %s", name, text)
		logins++
		if err := w.login(ctx); err != nil {
			return err
		}
	}
}

// login runs `mcpwarden login` and opens the URL it prints with an HTTP
// client that follows redirects, as a browser would: the authorization
// server's redirect reaches login's loopback listener.
func (w warden) login(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, w.bin, "login", "--config", w.config, "--timeout", "20s", serverName)
	cmd.Env = w.env
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting mcpwarden login: %w", err)
	}
	opened := make(chan error, 1)
	urls := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fmt.Fprintln(os.Stderr, "login: "+line)
		if urls == 0 && (strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://")) {
			urls++
			go func() { opened <- open(ctx, line) }()
		}
	}
	werr := cmd.Wait()
	if urls == 0 {
		return fmt.Errorf("mcpwarden login printed no URL (%v)", werr)
	}
	oerr := <-opened
	if werr != nil {
		return fmt.Errorf("mcpwarden login: %w (following its URL: %v)", werr, oerr)
	}
	return oerr
}

// open follows the authorization URL to its end.
func open(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("following the sign-in URL: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the sign-in ended in %s: %s", resp.Status, body)
	}
	return nil
}

// findTool lists the tools through c and returns the wire name of the
// scenario's test tool, if it is listed.
func findTool(ctx context.Context, c *client.Client) (string, bool, error) {
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return "", false, fmt.Errorf("listing tools through mcpwarden: %w", err)
	}
	for _, t := range tools.Tools {
		if strings.HasSuffix(t.Name, testTool) {
			return t.Name, true, nil
		}
	}
	return "", false, nil
}

// awaitTool waits until serve, which retries a server that is down in
// the background, lists the test tool.
func awaitTool(ctx context.Context, c *client.Client) (string, error) {
	for {
		name, found, err := findTool(ctx, c)
		if err != nil || found {
			return name, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("mcpwarden never listed %s after the new sign-in: %w", testTool, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// wantsLogin reports whether serve logged, by now or within wait, that a
// server needs `mcpwarden login`.
func (w warden) wantsLogin(ctx context.Context, wait time.Duration) bool {
	select {
	case <-w.loginWanted:
		return true
	case <-time.After(wait):
		return false
	case <-ctx.Done():
		return false
	}
}
