package sandbox

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// SeatbeltExec are the macOS directories every sandboxed server may read
// and execute: the system, the developer tools, Homebrew.
var SeatbeltExec = []string{"/usr", "/bin", "/sbin", "/System", "/Library/Developer/CommandLineTools", "/opt/homebrew", "/usr/local"}

// SeatbeltRead are the read-only macOS system paths: what the dynamic
// loader, libc's name service, TLS and time zones read, not /etc as a
// whole (on macOS /etc is /private/etc).
var SeatbeltRead = []string{
	"/private/etc/hosts", "/private/etc/resolv.conf", "/private/etc/services", "/private/etc/protocols",
	"/private/etc/passwd", "/private/etc/group", "/private/etc/ssl", "/private/etc/localtime",
	"/private/var/db/timezone", "/private/var/run/resolv.conf", "/Library/Preferences/Logging",
}

// seatbeltServices are the Mach services a server may look up: the user
// and group database, the system log, certificate trust, temporary
// directories.
var seatbeltServices = []string{
	"com.apple.system.opendirectoryd.libinfo", "com.apple.system.logger", "com.apple.logd",
	"com.apple.trustd.agent", "com.apple.bsd.dirhelper", "com.apple.system.notification_center",
}

// SeatbeltProfile is the macOS Seatbelt (sandbox-exec) profile with the
// intent of p on Linux: deny by default; read and execute the system and
// p.Exec; read p.Read; read and write p.Home, p.TmpDir and p.Write, never
// execute there; nothing of p.Hide (mcpwarden's own files inside a grant);
// no reading of realHome's files beyond what p grants (their
// metadata stays visible, as Landlock leaves it on Linux); the network
// none or host. Every path must be absolute and already resolved (on macOS
// /tmp is /private/tmp: Seatbelt matches the resolved path); a path with a
// control character or invalid UTF-8 is an error, and every other one is
// quoted, so no path can end its string or add a rule.
func SeatbeltProfile(p Policy, realHome string) (string, error) {
	var b strings.Builder
	var err error
	rule := func(action, ops string, filter string, paths []string) {
		var fs []string
		for _, x := range paths {
			if x == "" {
				continue
			}
			q, qerr := seatbeltQuote(x)
			if qerr != nil {
				if err == nil {
					err = qerr
				}
				return
			}
			fs = append(fs, "("+filter+" "+q+")")
		}
		if len(fs) > 0 {
			fmt.Fprintf(&b, "(%s %s\n  %s)\n", action, ops, strings.Join(fs, "\n  "))
		}
	}
	writable := append([]string{p.Home, p.TmpDir}, p.Write...)

	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("; processes: its own children, signals inside the sandbox only\n")
	b.WriteString("(allow process-fork)\n(allow signal (target same-sandbox))\n(allow process-info* (target same-sandbox))\n")
	b.WriteString("(allow sysctl-read)\n(allow file-read-metadata)\n")
	b.WriteString("(allow mach-lookup\n")
	for _, s := range seatbeltServices {
		fmt.Fprintf(&b, "  (global-name %q)\n", s)
	}
	b.WriteString(")\n")
	b.WriteString("; devices\n")
	b.WriteString("(allow file-read* file-write-data (literal \"/dev/null\") (literal \"/dev/zero\"))\n")
	b.WriteString("(allow file-read* (literal \"/dev/random\") (literal \"/dev/urandom\"))\n")
	b.WriteString("; the system\n")
	rule("allow", "file-read* process-exec", "subpath", SeatbeltExec)
	rule("allow", "file-read*", "subpath", SeatbeltRead)
	b.WriteString("; the real home, but what the policy grants below\n")
	rule("deny", "file-read-data file-read-xattr file-write* process-exec", "subpath", []string{realHome})
	b.WriteString("; the server's installation, its reads, its writable directories\n")
	rule("allow", "file-read* process-exec", "subpath", p.Exec)
	rule("allow", "file-read*", "subpath", p.Read)
	rule("allow", "file-read* file-write*", "subpath", writable)
	b.WriteString("; nothing written is executed (later rules win)\n")
	rule("deny", "process-exec", "subpath", writable)
	if len(p.Hide) > 0 {
		b.WriteString("; mcpwarden's own files inside what is granted (later rules win)\n")
		rule("deny", "file-read* file-write* process-exec", "subpath", p.Hide)
	}
	if len(p.ReadOnly) > 0 {
		b.WriteString("; self-protection's files inside what is writable: read-only\n")
		rule("deny", "file-write*", "subpath", p.ReadOnly)
	}
	switch p.Network {
	case NetworkHost:
		b.WriteString("; network: host\n(allow network*)\n")
		b.WriteString("(allow mach-lookup (global-name \"com.apple.dnssd.service\"))\n")
	case NetworkProxy:
		b.WriteString("; network: proxy, which macOS has no egress proxy for yet: nothing goes out\n")
	default:
		b.WriteString("; network: none\n")
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// seatbeltQuote is path as an SBPL string literal: backslash and double
// quote escaped. A relative path, or one with a control character or
// invalid UTF-8, is refused: it is no resolved path, and its bytes would
// reach Seatbelt's reader.
func seatbeltQuote(p string) (string, error) {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("sandbox path %q is not absolute: write the full path", p)
	case !utf8.ValidString(p):
		return "", fmt.Errorf("sandbox path %q is not valid UTF-8: rename it, or leave it out of the sandbox", p)
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("sandbox path %q has a control character: rename it, or leave it out of the sandbox", p)
	}
	p = path.Clean(p)
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range p {
		if r == '\\' || r == '"' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String(), nil
}
