package egress

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// clientHello returns the first flight of a TLS client naming serverName.
func clientHello(tb testing.TB, serverName string) []byte {
	tb.Helper()
	c, s := net.Pipe()
	defer s.Close()
	go func() {
		tc := tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // only the hello is used
		_ = tc.Handshake()
		c.Close()
	}()
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<16)
	n, err := s.Read(buf)
	if err != nil {
		tb.Fatal(err)
	}
	return buf[:n]
}

func TestReadClientHello(t *testing.T) {
	t.Parallel()
	hello := clientHello(t, "Example.COM")
	tests := []struct {
		name, want string
		in         []byte
		ok         bool
	}{
		{"a ClientHello naming a host", "example.com", hello, true},
		{"one without a name", "", clientHello(t, ""), true},
		{"one followed by more bytes", "example.com", append(append([]byte{}, hello...), "more"...), true},
		{"a truncated one", "", hello[:len(hello)-1], false},
		{"plain HTTP", "", []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), false},
		{"nothing", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name, raw, err := readClientHello(bytes.NewReader(tt.in))
			if n, _ := hostport.NormalizeHost(name); n != tt.want || (err == nil) != tt.ok {
				t.Errorf("readClientHello = %q, %v; want %q, ok %t", name, err, tt.want, tt.ok)
			}
			if !bytes.HasPrefix(tt.in, raw) {
				t.Errorf("recorded %q, which is not what was read", raw)
			}
		})
	}
}

// FuzzClientHello checks the ClientHello reader on arbitrary bytes: it
// never panics, never reads more than maxHello, and records exactly the
// bytes it read (a prefix of the input), so that the replay is faithful.
func FuzzClientHello(f *testing.F) {
	f.Add(clientHello(f, "example.com"))
	f.Add(clientHello(f, ""))
	f.Add(clientHello(f, "127.0.0.1"))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, raw, err := readClientHello(bytes.NewReader(b))
		if len(raw) > maxHello {
			t.Fatalf("read %d bytes, more than %d", len(raw), maxHello)
		}
		if !bytes.HasPrefix(b, raw) {
			t.Fatalf("recorded %q, not a prefix of the input", raw)
		}
		if err != nil && name != "" {
			t.Fatalf("a name %q with an error %v", name, err)
		}
		if err == nil && name != "" {
			if n, ok := hostport.NormalizeHost(name); ok && checkServerName(name, n) != nil {
				t.Fatalf("server name %q does not match its own host %q", name, n)
			}
		}
	})
}
