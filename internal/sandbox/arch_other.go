//go:build linux && !amd64 && !arm64

package sandbox

// nativeArch is unknown here: the architecture guard refuses to load, so
// seccomp is reported missing.
const nativeArch = 0
