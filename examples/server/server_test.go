package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestLiveNeverInitializes(t *testing.T) {
	counting := &devicetest.Counting{Backend: sim.New()}
	srv, err := newServer(device.New(counting), 42, quietLogger())
	require.NoError(t, err)
	defer shutDown(srv)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for range 50 {
		resp, err := http.Get(ts.URL + health.LivePath)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Zero(t, counting.Calls().Total())
}

func TestALostDeviceTurnsReadinessOffAndStatusNamesIt(t *testing.T) {
	s := sim.New()
	rt := device.New(s)
	srv, err := newServer(rt, 42, quietLogger())
	require.NoError(t, err)
	defer shutDown(srv)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.NoError(t, rt.Init(context.Background()))
	code, _ := get(health.ReadyPath)
	require.Equal(t, http.StatusOK, code)
	s.LoseDevice(0, 700)
	code, body := get("/v1/draw?n=4")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "CUDA_ERROR_ILLEGAL_ADDRESS")
	code, body = get(health.ReadyPath)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "device 0 lost")
	_, body = get(health.StatusPath)
	var st health.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Len(t, st.Lost, 1)
	assert.Equal(t, 0, st.Lost[0].Ordinal)
	assert.Equal(t, 700, st.Lost[0].Error.Code)
}

func TestDrawOnTheCPUWithoutDeviceGenerators(t *testing.T) {
	rt := device.New(noGenerators{sim.New()})
	srv, err := newServer(rt, 7, quietLogger())
	require.NoError(t, err)
	defer shutDown(srv)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, wantOffset := range []uint64{0, 8} {
		resp, err := http.Get(ts.URL + "/v1/draw?n=5")
		require.NoError(t, err)
		var d drawResult
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&d))
		resp.Body.Close()
		assert.Equal(t, "cpu", d.Source)
		assert.Equal(t, wantOffset, d.Offset, "the offset advances by whole blocks, as on a device")
		want := make([]uint32, 5)
		philox.FillCURAND(want, 7, d.Offset)
		assert.Equal(t, want, d.Values)
	}
}

// noGenerators hides sim's generators.
type noGenerators struct{ driver.Backend }

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	d = slices.Clone(d)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100]
}

// TestADrawWaitsForInitNoLongerThanItsRequest: while one draw waits for a
// slow init, another whose request ends sooner is answered when it ends.
// The init is held until the test releases it, after the second draw's
// answer: that draw can only have ended by its own deadline.
func TestADrawWaitsForInitNoLongerThanItsRequest(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, err := newServer(device.New(heldInit{Backend: sim.New(), release: release}), 42, quietLogger())
	require.NoError(t, err)
	defer shutDown(srv)
	handler := srv.Handler()
	draw := func(ctx context.Context) int {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/draw?n=4", nil))
		return w.Code
	}
	first := make(chan int, 1)
	waiting := &waitSignal{Context: context.Background(), waiting: make(chan struct{})}
	go func() { first <- draw(waiting) }()
	<-waiting.waiting // the first draw waits for init
	require.Equal(t, lazy.Initializing, srv.rt.Stats().State)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.Equal(t, http.StatusServiceUnavailable, draw(ctx))
	assert.Less(t, time.Since(start), time.Second, "the second draw waited past its own deadline")
	assert.Equal(t, lazy.Initializing, srv.rt.Stats().State, "answered while init still ran")
	close(release)
	assert.Equal(t, http.StatusOK, <-first, "the first draw is served once init finishes")
}

// waitSignal is a request's context that closes waiting when its Done is
// first asked for: where a draw starts waiting on it (for init, or for the
// draw lock).
type waitSignal struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (w *waitSignal) Done() <-chan struct{} {
	w.once.Do(func() { close(w.waiting) })
	return w.Context.Done()
}

// TestALostDeviceIsLoggedOnceWithoutAProbe: draws that hit a lost device log
// it once, whether or not anything probes health.
func TestALostDeviceIsLoggedOnceWithoutAProbe(t *testing.T) {
	s := sim.New()
	rt := device.New(s)
	var logs bytes.Buffer // the draws run on this goroutine, and nothing else logs
	srv, err := newServer(rt, 42, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	defer shutDown(srv)
	require.NoError(t, rt.Init(context.Background()))
	s.LoseDevice(0, 700)
	handler := srv.Handler()
	for range 3 {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/draw?n=4", nil))
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "device lost"), "logged once:\n%s", logs.String())
}

// shutDown shuts srv's runtime down for a test's end, waiting a few seconds
// at most: a test that hung a driver call on purpose leaves it to the end.
func shutDown(srv *server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
