package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountResult is what setupMounts did.
type mountResult struct {
	masked       []string // the policy's Hide that were masked
	execWritable []string // writable directories left executable
	readOnly     []string // the policy's ReadOnly that were bound read-only
}

// setupMounts shapes the launcher's own mount namespace (tier namespaces)
// before Landlock: it masks the policy's Hide, makes every writable
// grant, and every mount under it, noexec, nosuid and nodev, so that
// nothing the server writes can be mapped executable (by the dynamic
// loader, say), not only not executed. An executable directory of the
// policy inside a writable one (a package runner's cache in HOME, an
// installation in the workspace) stays executable; one that holds a
// writable grant leaves that grant executable. Both are reported. Last it
// binds each of the policy's ReadOnly read-only. The
// launcher has CAP_SYS_ADMIN in its user namespace as an ambient
// capability for this; confine drops it, and every other, after
// (dropCapabilities). A [*noMountsError] says it could not mount at all.
func setupMounts(p Policy) (mountResult, error) {
	var res mountResult
	// Nothing done here may reach the parent's namespace.
	err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	if p.disabled(FeatureMounts) {
		err = errors.New("disabled by the policy")
	}
	if err != nil {
		return res, &noMountsError{err}
	}
	var writable []string
	for _, d := range append([]string{p.Home, p.TmpDir}, p.Write...) {
		if d != "" && !slices.Contains(writable, filepath.Clean(d)) {
			writable = append(writable, filepath.Clean(d))
		}
	}
	keep := slices.Concat(writable, p.Exec, p.Read)
	for _, h := range p.Hide {
		h = filepath.Clean(h)
		fi, err := os.Stat(h)
		if err != nil {
			continue // gone, or already hidden by a mask above it
		}
		if slices.ContainsFunc(keep, func(k string) bool { return filepath.Clean(k) == h }) {
			return res, fmt.Errorf("cannot hide %s: the server is granted it itself; move it out of what the server may reach", h)
		}
		if fi.IsDir() {
			err = maskDir(h, keep)
		} else {
			err = maskFile(h)
		}
		if err != nil {
			return res, err
		}
		res.masked = append(res.masked, h)
	}
	for _, w := range writable {
		if fi, err := os.Stat(w); err != nil || !fi.IsDir() {
			continue
		}
		if slices.ContainsFunc(p.Exec, func(e string) bool { return within(w, filepath.Clean(e)) }) {
			res.execWritable = append(res.execWritable, w)
			continue
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return res, fmt.Errorf("binding %s to make it not executable: %w", w, err)
		}
		// Every mount under it too: a file system mounted in the
		// workspace is as writable as the workspace.
		err := unix.MountSetattr(-1, w, unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
		if errors.Is(err, unix.ENOSYS) {
			err = remount(w, unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV) // before Linux 5.12: its own mount alone
		}
		if err != nil {
			return res, fmt.Errorf("making %s not executable: %w", w, err)
		}
		// An executable directory inside gets a mount of its own that
		// is executable again.
		for _, e := range p.Exec {
			e = filepath.Clean(e)
			if e == w || !within(e, w) || slices.Contains(res.execWritable, e) {
				continue
			}
			if err := unix.Mount(e, e, "", unix.MS_BIND, ""); err != nil {
				return res, fmt.Errorf("keeping %s executable: %w", e, err)
			}
			if err := unix.MountSetattr(-1, e, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NOEXEC}); err != nil {
				if !errors.Is(err, unix.ENOSYS) {
					return res, fmt.Errorf("keeping %s executable: %w", e, err)
				}
				if err := unix.Mount("", e, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
					return res, fmt.Errorf("keeping %s executable: %w", e, err)
				}
			}
			res.execWritable = append(res.execWritable, e)
		}
	}
	for _, r := range p.ReadOnly {
		r = filepath.Clean(r)
		if _, err := os.Stat(r); err != nil {
			continue // gone, or hidden
		}
		// Recursive, so a writable grant inside keeps its own mount.
		if err := unix.Mount(r, r, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return res, fmt.Errorf("binding %s read-only: %w", r, err)
		}
		if err := remount(r, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV); err != nil {
			return res, fmt.Errorf("binding %s read-only: %w", r, err)
		}
		res.readOnly = append(res.readOnly, r)
	}
	return res, nil
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// remount adds flags to the bind mount at path, keeping those it has: in
// a user namespace the kernel refuses to clear a flag the parent's mount
// had (read-only, an atime mode).
func remount(path string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	const kept = unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC |
		unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME
	// The ST_ flags have the values of the MS_ ones.
	return unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|flags|uintptr(st.Flags&kept), "")
}

// maskFile puts an unopenable, empty, read-only file over path: /dev/null
// on a nodev mount.
func maskFile(path string) error {
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("masking %s: %w", path, err)
	}
	if err := remount(path, unix.MS_RDONLY|unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return fmt.Errorf("masking %s read-only: %w", path, err)
	}
	return nil
}

// maskDir puts an empty read-only tmpfs over dir, with the grants of keep
// that lie inside it bound back in at their places (the server's own HOME
// in mcpwarden's state directory, say). The grants are opened before the
// tmpfs hides them, and bound from those descriptors.
func maskDir(dir string, keep []string) error {
	type kept struct {
		path string
		fd   int
		dir  bool
	}
	var ks []kept
	defer func() {
		for _, k := range ks {
			unix.Close(k.fd)
		}
	}()
	for _, k := range keep {
		k = filepath.Clean(k)
		if k == dir || !within(k, dir) || slices.ContainsFunc(ks, func(o kept) bool { return o.path == k }) {
			continue
		}
		fi, err := os.Stat(k)
		if err != nil {
			continue
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("masking %s: opening %s, which stays: %w", dir, k, err)
		}
		ks = append(ks, kept{k, fd, fi.IsDir()})
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("masking %s: %w", dir, err)
	}
	for _, k := range ks {
		var err error
		if k.dir {
			err = os.MkdirAll(k.path, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(k.path), 0o755); err == nil {
			err = os.WriteFile(k.path, nil, 0o600)
		}
		if err == nil {
			err = unix.Mount("/proc/self/fd/"+strconv.Itoa(k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, "")
		}
		if err != nil {
			return fmt.Errorf("masking %s: binding %s back: %w", dir, k.path, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("masking %s read-only: %w", dir, err)
	}
	return nil
}

// A noMountsError is why the launcher cannot mount at all: the server
// then starts without masks or noexec mounts (see confine).
type noMountsError struct{ err error }

func (e *noMountsError) Error() string {
	return "the user namespace cannot mount (" + e.err.Error() + "; AppArmor's kernel.apparmor_restrict_unprivileged_userns, say)"
}

func (e *noMountsError) Unwrap() error { return e.err }

// dropCapabilities drops every capability the launcher holds, ambient
// ones included, so the server's exec gets none.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing the launcher's ambient capabilities: %w", err)
	}
	var none [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("dropping the launcher's capabilities: %w", err)
	}
	return nil
}
