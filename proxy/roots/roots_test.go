package roots

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestLocalRootsKeepsOnlyLocalDirectories(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		uri  string
		want []string
	}{
		{"a file URI is its clean path", "file:///home/me/../me/work/", []string{"/home/me/work"}},
		{"localhost is this machine", "file://localhost/srv/data", []string{"/srv/data"}},
		{"another host names no local directory", "file://fileserver/share", []string{}},
		{"another scheme names no local directory", "https://example.com/repo", []string{}},
		{"a relative path names no directory", "file:relative/dir", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := localRoots([]mcp.Root{{URI: tt.uri}}); !slices.Equal(got, tt.want) {
				t.Errorf("localRoots(%q) = %q, want %q", tt.uri, got, tt.want)
			}
		})
	}
}

// A changingLister answers roots/list with one root, and has the client
// change its roots while the answer is on its way.
type changingLister struct {
	cache *Cache
	asked int
}

func (l *changingLister) RequestRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	l.asked++
	l.cache.Forget("s1")
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///old"}}}, nil
}

func TestRootsThatChangedDuringTheFetchAreNotCached(t *testing.T) {
	t.Parallel()
	l := &changingLister{}
	l.cache = New(l, slog.New(slog.DiscardHandler))
	caps := &mcp.ClientCapabilities{Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
	for range 2 {
		roots, _, input := l.cache.For(t.Context(), "s1", caps, false, mcp.CallToolRequest{})
		if input != nil || !slices.Equal(roots, []string{"/old"}) {
			t.Fatalf("For = %q, %v; want the roots fetched", roots, input)
		}
	}
	if l.asked != 2 {
		t.Errorf("the client was asked %d times; roots that changed while fetched were cached", l.asked)
	}
	l.cache.End("s1")
	if n := l.cache.Len(); n != 0 {
		t.Errorf("an ended session leaves %d rows", n)
	}
}
