package rules

import "strings"

// A viewLink is the kind of link a server-view path goes through: the
// process's working directory, its root, one of its file descriptors, or
// none (a file of the process directory itself, `/proc/self/environ`).
type viewLink uint8

const (
	viewProc viewLink = iota // /proc/<pid>/… with no link: its own files
	viewCwd                  // /proc/<pid>/cwd/…: the process's working directory
	viewRoot                 // /proc/<pid>/root/…: the process's root directory
	viewFd                   // /proc/<pid>/fd/<n>/…: what descriptor n is open on
)

// A serverView is an absolute path read in the view of the process that
// opens it: `/proc/self`, `/proc/thread-self`, `/dev/fd`, `/dev/stdin`,
// `/dev/stdout`, `/dev/stderr` and `/proc/net` name the server process
// (not mcpwarden), and `/proc/<pid>` some process; where such a path leads
// cannot be known without asking the kernel about that process. link is
// the magic link the path goes through and tail what follows it, uncleaned
// (the kernel resolves its `..` from wherever the link leads).
type serverView struct {
	link viewLink
	tail string
}

// viewLinkTarget returns the target of a link outside /proc/<pid> that leads
// into the opening process's directory, as the kernel (or udev) sets them
// up: /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr, /proc/thread-self,
// /proc/net (self/net, so /proc/net/../cwd is the opener's cwd);
// self stands for that process, and for a thread of it.
func viewLinkTarget(dir, name string) []string {
	switch {
	case dir == "dev" && name == "fd":
		return []string{"proc", "self", "fd"}
	case dir == "dev" && name == "stdin":
		return []string{"proc", "self", "fd", "0"}
	case dir == "dev" && name == "stdout":
		return []string{"proc", "self", "fd", "1"}
	case dir == "dev" && name == "stderr":
		return []string{"proc", "self", "fd", "2"}
	case dir == "proc" && name == "thread-self":
		return []string{"proc", "self", "task", "self"}
	case dir == "proc" && name == "net":
		return []string{"proc", "self", "net"}
	}
	return nil
}

// viewOf reports whether the absolute path s is read in the view of the
// process that opens it, walking it as the kernel does: `..` is taken
// lexically except after a magic link, and /dev/fd and the other links of
// viewLinks are replaced by their targets before the components after
// them are read (so `/dev/fd/../cwd/x` is `/proc/self/cwd/x`). It does no
// I/O.
func viewOf(s string) (serverView, bool) {
	if !strings.HasPrefix(s, "/") || !strings.Contains(s, "/proc") && !strings.Contains(s, "/dev") {
		return serverView{}, false // the common case, without allocating
	}
	var stack []string
	rest := s
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		stack = append(stack, comp)
		if len(stack) == 2 {
			if to := viewLinkTarget(stack[0], stack[1]); to != nil {
				stack = append(stack[:0], to...)
			}
		}
		if v, ok := procLink(stack); ok {
			v.tail = rest
			return v, true
		}
	}
	if isProcDir(stack) {
		return serverView{link: viewProc}, true
	}
	return serverView{}, false
}

// isProcDir reports whether the walked components are a process directory
// or something in it: /proc/self, /proc/<pid>.
func isProcDir(stack []string) bool {
	return len(stack) >= 2 && stack[0] == "proc" && (stack[1] == "self" || isDigits(stack[1]))
}

// procLink reports whether the walked components end at a magic link of a
// process (or of one of its threads, /proc/<pid>/task/<tid>/…): cwd, root
// or fd/<n>.
func procLink(stack []string) (serverView, bool) {
	if !isProcDir(stack) {
		return serverView{}, false
	}
	i := 2
	if len(stack) >= 4 && stack[2] == "task" && (stack[3] == "self" || isDigits(stack[3])) {
		i = 4
	}
	switch {
	case len(stack) == i+1 && stack[i] == "cwd":
		return serverView{link: viewCwd}, true
	case len(stack) == i+1 && stack[i] == "root":
		return serverView{link: viewRoot}, true
	case len(stack) == i+2 && stack[i] == "fd":
		return serverView{link: viewFd}, true
	}
	return serverView{}, false
}

// isDigits reports whether s is a non-empty run of ASCII digits (a process
// or thread id, or a descriptor number).
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// view calls fn with the guesses for s, a server-view path (v): s itself,
// and where it may lead: the tail after a cwd or fd link as a relative path
// under any directory (and under the server's root, its usual working
// directory), the tail after a root link as an absolute path. None is
// known; the physical form the proxy resolved in the server's view, if
// any, is added by forms.
func (e *pathEnv) view(s string, v serverView, fn func(raw string, known bool) bool) bool {
	if fn(s, false) {
		return true
	}
	switch v.link {
	case viewCwd, viewFd:
		if v.link == viewCwd && e.root != "" && fn(e.root+"/"+v.tail, false) {
			return true
		}
		return v.tail != "" && e.guesses(v.tail, fn)
	case viewRoot:
		return e.readings("/"+v.tail, func(raw string, _ bool) bool { return fn(raw, false) })
	}
	return false
}

// isView reports whether the absolute path s is read in the view of the
// process that opens it (see viewOf).
func isView(s string) bool {
	_, ok := viewOf(s)
	return ok
}

// viewPlaces returns the absolute guesses at where raw, a path in the
// server's view, leads that the proxy can resolve on disk without knowing
// the server's process (view emits them too): the tail after a cwd link
// under the server's root (its working directory, shared by every
// isolated child), the tail after a root link from `/`.
func (e *pathEnv) viewPlaces(raw string) []string {
	v, ok := viewOf(raw)
	switch {
	case !ok:
		return nil
	case v.link == viewCwd && e.root != "":
		return []string{e.root + "/" + v.tail}
	case v.link == viewRoot:
		return []string{"/" + v.tail}
	}
	return nil
}
