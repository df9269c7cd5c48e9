package proxy

import (
	"context"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// listedServer returns a server exposing fs's read_file, write_file and
// delete_file under a policy that hides delete_file, and the wire tools
// as mcp-go hands them to the filter.
func listedServer(tb testing.TB) (*Server, []mcp.Tool) {
	tb.Helper()
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:*"}, Deny: []string{"mcp:fs:delete_file"}}})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(Options{Upstream: noUpstream{}, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		tb.Fatal(err)
	}
	defs := []mcp.Tool{{Name: "read_file"}, {Name: "write_file"}, {Name: "delete_file"}}
	names, err := srv.current().naming.Names(map[string][]mcp.Tool{"fs": defs})
	if err != nil {
		tb.Fatal(err)
	}
	srv.snap.Store(srv.current().withNames(names))
	var wire []mcp.Tool
	for _, d := range defs {
		wire = append(wire, mcp.Tool{Name: naming.Scheme{}.Tool("fs", d.Name).Wire})
	}
	return srv, wire
}

func wireNames(tools []mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func TestListedDropsHiddenToolsWherever(t *testing.T) {
	t.Parallel()
	srv, wire := listedServer(t)
	read, write, del := wire[0], wire[1], wire[2]
	unknown := mcp.Tool{Name: "fs__nope"}
	tests := []struct {
		name string
		in   []mcp.Tool
		want []mcp.Tool
	}{
		{"a hidden tool first", []mcp.Tool{del, read, write}, []mcp.Tool{read, write}},
		{"a hidden tool in the middle", []mcp.Tool{read, del, write}, []mcp.Tool{read, write}},
		{"a hidden tool last", []mcp.Tool{read, write, del}, []mcp.Tool{read, write}},
		{"only a hidden tool", []mcp.Tool{del}, nil},
		{"an unknown tool", []mcp.Tool{unknown, read}, []mcp.Tool{read}},
		{"no hidden tool", []mcp.Tool{read, write}, []mcp.Tool{read, write}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tt.in)
			got := srv.tools.listed(t.Context(), in)
			if !slices.Equal(wireNames(got), wireNames(tt.want)) {
				t.Errorf("listed = %v, want %v", wireNames(got), wireNames(tt.want))
			}
			if !slices.Equal(wireNames(in), wireNames(tt.in)) {
				t.Errorf("listed changed its input to %v", wireNames(in))
			}
		})
	}
}

// TestListingACallDoesNotAllocate holds the filter mcp-go runs on every
// tools/call (one tool, shown) to no allocation.
func TestListingACallDoesNotAllocate(t *testing.T) {
	srv, wire := listedServer(t)
	one := wire[:1]
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = srv.tools.listed(ctx, one) }); n != 0 {
		t.Errorf("allocs per call = %v, want 0", n)
	}
}

// oldListed is listed as it was before it stopped copying: it stays as
// the benchmark's baseline.
func (s *Server) oldListed(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	snap := s.current()
	profile := s.profileOf(ctx)
	out := tools[:0:0]
	for _, def := range tools {
		if s.tools.shown(snap, profile, def.Name) {
			out = append(out, def)
		}
	}
	return out
}

// BenchmarkListedOnACall compares the filter on one shown tool, as
// mcp-go runs it on each tools/call, copying (Old) and not (New).
func BenchmarkListedOnACall(b *testing.B) {
	srv, wire := listedServer(b)
	one := wire[:1]
	ctx := context.Background()
	b.Run("Old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = srv.oldListed(ctx, one)
		}
	})
	b.Run("New", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = srv.tools.listed(ctx, one)
		}
	})
}
