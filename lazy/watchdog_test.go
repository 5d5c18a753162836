package lazy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the watchdog's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

func TestWatchdogWarnsOncePerSlowFunction(t *testing.T) {
	const threshold = 50 * time.Millisecond
	slow := func(context.Context) error { time.Sleep(8 * threshold); return nil }
	var buf syncBuffer
	i := New(slow, WithWatchdog(threshold), WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	ctx := context.Background()
	require.NoError(t, i.Call(ctx, func(context.Context) error { return nil })) // fast: no warning
	site := callSite()
	require.NoError(t, i.Call(ctx, slow))
	require.NoError(t, i.Init(ctx))

	recs := buf.records(t)
	require.Len(t, recs, 2, "one warning for init, one for the slow queued call")
	for k, want := range []struct{ phase, site string }{{"init", "init"}, {"queued call", site}} {
		r := recs[k]
		assert.Equal(t, "WARN", r["level"])
		assert.Equal(t, want.phase, r["phase"])
		assert.Equal(t, want.site, r["site"])
		assert.GreaterOrEqual(t, r["elapsed"], float64(threshold))
		assert.Contains(t, r["goroutines"], "goroutine ")
		assert.Contains(t, r["goroutines"], "TestWatchdogWarnsOncePerSlowFunction")
	}
}

func TestWatchdogZeroDisables(t *testing.T) {
	var buf syncBuffer
	i := New(func(context.Context) error { time.Sleep(30 * time.Millisecond); return nil },
		WithWatchdog(0), WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	require.NoError(t, i.Init(context.Background()))
	assert.Empty(t, buf.records(t))
}

func TestWatchdogDefaultThreshold(t *testing.T) {
	assert.Equal(t, DefaultWatchdog, (&options{}).threshold())
	var o options
	WithWatchdog(-time.Second)(&o)
	assert.Zero(t, o.threshold())
}
