package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type answer struct {
	path    string
	code    int
	body    []byte
	took    time.Duration
	endedAt time.Time
	err     error
}

// TestColdStart sends a thousand requests at a server whose GPU takes 300 ms
// to initialize, all before it has: readiness and status answer at once,
// draws wait for the GPU, and the driver is initialized once.
func TestColdStart(t *testing.T) {
	counting := &devicetest.Counting{Backend: sim.New(sim.WithInitDelay(300 * time.Millisecond))}
	rt := device.New(counting)
	srv, err := newServer(rt, 42, quietLogger())
	require.NoError(t, err)
	defer srv.Close()
	// Time the readiness handler itself, server side, as well as each answer
	// at the client.
	var handlerMu sync.Mutex
	var handlerTimes []time.Duration
	handler := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		handler.ServeHTTP(w, r)
		if r.URL.Path == health.ReadyPath {
			handlerMu.Lock()
			handlerTimes = append(handlerTimes, time.Since(t0))
			handlerMu.Unlock()
		}
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}, Timeout: 30 * time.Second}

	const perKind = 500
	// Open the connections first (liveness never initializes), so that the
	// burst measures the server, not a thousand TCP handshakes at once.
	var warm sync.WaitGroup
	for range 2 * perKind {
		warm.Go(func() {
			resp, err := client.Get(ts.URL + health.LivePath)
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	warm.Wait()
	require.Zero(t, counting.Calls().Total(), "warming up touched nothing")
	// Collect the warm-up's garbage now, so that a collection over two
	// thousand connection goroutines' stacks does not land in the burst.
	runtime.GC()
	paths := make([]string, 0, 2*perKind)
	for i := range perKind {
		paths = append(paths, map[bool]string{true: health.ReadyPath, false: health.StatusPath}[i%2 == 0], "/v1/draw?n=16")
	}
	answers := make([]answer, len(paths))
	start := make(chan struct{})
	var started, wg sync.WaitGroup
	for i, path := range paths {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			<-start
			t0 := time.Now()
			resp, err := client.Get(ts.URL + path)
			a := answer{path: path, err: err}
			if err == nil {
				a.code = resp.StatusCode
				a.body, a.err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			a.took, a.endedAt = time.Since(t0), time.Now()
			answers[i] = a
		})
	}
	started.Wait()
	close(start)
	wg.Wait()
	_, initDone := rt.InitTimes()
	require.False(t, initDone.IsZero())

	assert.Equal(t, int64(1), counting.Calls().Init, "exactly one backend Init")
	var readyDuringInit []time.Duration
	var offsets []uint64
	for _, a := range answers {
		require.NoError(t, a.err, a.path)
		switch a.path {
		case health.ReadyPath:
			if a.endedAt.Before(initDone) {
				assert.Equal(t, http.StatusServiceUnavailable, a.code)
				readyDuringInit = append(readyDuringInit, a.took)
			}
		case health.StatusPath:
			assert.Equal(t, http.StatusOK, a.code)
		default:
			require.Equal(t, http.StatusOK, a.code, "%s", a.body)
			var d drawResult
			require.NoError(t, json.Unmarshal(a.body, &d))
			assert.Equal(t, uint64(42), d.Seed, "the seed queued before init applies")
			assert.Equal(t, "device", d.Source)
			want := make([]uint32, len(d.Values))
			philox.FillCURAND(want, d.Seed, d.Offset)
			assert.Equal(t, want, d.Values, "offset %d", d.Offset)
			offsets = append(offsets, d.Offset)
		}
	}
	require.NotEmpty(t, readyDuringInit, "readiness was probed while init ran")
	p50, p99 := percentiles(readyDuringInit)
	h50, h99 := percentiles(handlerTimes)
	t.Logf("readiness while init ran: %d answers; at the client p50 %s, p99 %s; in the handler p50 %s, p99 %s",
		len(readyDuringInit), p50, p99, h50, h99)
	assert.Less(t, h99, 100*time.Millisecond, "the handler never waits for init")
	if !raceEnabled {
		assert.Less(t, p99, 100*time.Millisecond, "at the client, with 1000 requests in flight")
	}
	slices.Sort(offsets)
	for i, o := range offsets {
		assert.Equal(t, uint64(16*i), o, "every draw had a stream position of its own")
	}
}

func TestLiveNeverInitializes(t *testing.T) {
	counting := &devicetest.Counting{Backend: sim.New()}
	srv, err := newServer(device.New(counting), 42, quietLogger())
	require.NoError(t, err)
	defer srv.Close()
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
	defer srv.Close()
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
	defer srv.Close()
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
type noGenerators struct{ device.Backend }

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	d = slices.Clone(d)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100]
}
