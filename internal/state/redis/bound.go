package redis

import (
	"context"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A bound is a go-redis hook that gives each command, and each pipeline,
// one deadline for all of it: waiting for a connection from the pool,
// dialling, writing, reading and retrying together. go-redis's own
// timeouts are per attempt (a read timed out and retried once took twice
// Options.Timeout); this is what holds a Redis that is paused, rather than
// gone, to Options.Timeout in total.
type bound struct{ timeout time.Duration }

var _ goredis.Hook = bound{}

func (b bound) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return next(ctx, network, addr)
	}
}

func (b bound) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (b bound) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return next(ctx, cmds)
	}
}
