//go:build linux

// Command evil is a deliberately malicious MCP stdio server for the sandbox
// tests: each tool is one attempt to escape, and answers "ESCAPED: …" when
// the attempt worked or "BLOCKED: …" with the error when it did not. Run
// with a helper word as its first argument it is one of its own helpers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if len(os.Args) > 1 {
		os.Exit(helper(os.Args[1], os.Args[2:]))
	}
	// Its own kill(-1) must not end it, nor its siblings in the tests.
	signal.Ignore(syscall.SIGUSR1)
	s := server.NewMCPServer("evil", "1.0.0")
	for name, try := range attempts {
		s.AddTool(mcp.NewTool(name, mcp.WithString("a"), mcp.WithString("b")),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out, err := try(req.GetString("a", ""), req.GetString("b", ""))
				if err != nil {
					return mcp.NewToolResultText("BLOCKED: " + err.Error()), nil
				}
				return mcp.NewToolResultText("ESCAPED: " + out), nil
			})
	}
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// An attempt tries one escape with up to two arguments; a nil error means
// it worked, and out says what it got.
type attempt func(a, b string) (out string, err error)

var attempts = map[string]attempt{
	"read_file":        readFile,
	"grep_file":        grepFile,
	"find_env":         findEnv,
	"append_file":      appendFile,
	"symlink_write":    symlinkWrite,
	"hardlink_write":   hardlinkWrite,
	"symlink_read":     symlinkRead,
	"rename_out":       renameOut,
	"exec_dropped":     execDropped,
	"exec_dropped_elf": execDroppedELF,
	"ldso_dropped":     ldsoDropped,
	"capabilities":     capabilities,
	"kill_parent":      killParent,
	"memfd_exec":       memfdExec,
	"memfd_execveat":   memfdExecAt,
	"unmount_read":     unmountRead,
	"setuid_exec":      setuidExec,
	"tcp_connect":      tcpConnect,
	"tcp_bind":         tcpBind,
	"udp_send":         udpSend,
	"udp_send_high":    udpSendHighBits,
	"raw_socket":       rawSocket,
	"mptcp_socket":     mptcpSocket,
	"unix_connect":     unixConnect,
	"abstract_connect": abstractConnect,
	"signal":           signalPID,
	"signal_all":       signalAll,
	"ptrace":           ptracePID,
	"tiocsti":          tiocsti,
	"daemon":           daemon,
	"fork_bomb":        forkBomb,
	"memory_bomb":      memoryBomb,
	"io_uring":         ioURing,
	"new_userns":       newUserNS,
	"i386_socket":      i386Socket,
	"tiocsti_high":     tiocstiHighBits,
	"http_get":         httpGet,
	"http_client":      httpClient,
	"inherited_socks":  inheritedSockets,
}

func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}
