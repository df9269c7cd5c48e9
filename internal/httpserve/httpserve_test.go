package httpserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestRunServesUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan [2]error, 1)
	var beforeErr error = errors.New("beforeShutdown was not called")
	go func() {
		served, shutdown := Run(ctx, srv, ln, time.Second, func(c context.Context) { beforeErr = c.Err() })
		done <- [2]error{served, shutdown}
	}()
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("body %q, want ok", body)
	}
	cancel()
	got := <-done
	if got[0] != nil || got[1] != nil {
		t.Errorf("Run = %v, %v; want nil, nil", got[0], got[1])
	}
	if beforeErr != nil {
		t.Errorf("beforeShutdown: %v, want a live context", beforeErr)
	}
}

func TestRunReturnsTheErrorThatEndsServing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	served, shutdown := Run(t.Context(), &http.Server{}, ln, time.Second, nil)
	if !errors.Is(served, net.ErrClosed) || shutdown != nil {
		t.Errorf("Run = %v, %v; want net.ErrClosed, nil", served, shutdown)
	}
}
