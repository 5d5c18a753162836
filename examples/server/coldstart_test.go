package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyBound is the readiness answer time, at the client's p99, that a cold
// start must keep while the GPU initializes.
const readyBound = 100 * time.Millisecond

// TestColdStart sends a thousand requests, and 100 liveness requests as a
// control, at a server whose GPU is still initializing: its init is held
// open until a hundred readiness and ten liveness answers have come back (or
// ten seconds pass), so that the burst always has answers from while init
// ran, however busy the machine. Readiness and status answer at once, draws
// wait for the GPU, and the driver is initialized once.
//
// The readiness answers counted ended while init was held open, so the
// handler did not wait for init: one that did ends none of them, and the
// test fails after three bursts that measure nothing. Liveness requests in
// the same burst never touch init, so they measure the machine: in every
// burst, readiness's p99 at the client must keep pace with liveness's
// (within 1.5 times and 10 ms), under -race too. The 100 ms bound, at the
// client and in the handler, is wall-clock time on a machine that go test
// ./... shares with the compilers and tests of other packages, so a burst
// that misses it is tried again on a new cold server, up to three in all;
// if every burst misses it while keeping pace with liveness, the machine was
// too busy to measure the bound, and the test passes, saying so. Under
// -race, whose cost on a thousand exchanges dominates the client's figure,
// only the handler's bound and the pace are checked.
// A burst in which no readiness answer ended before init did measures
// nothing and is tried again too; if none of the three measures, the test
// fails, as it does when readiness waits for init.
func TestColdStart(t *testing.T) {
	const attempts = 3
	measured := 0
	for attempt := 1; attempt <= attempts; attempt++ {
		cs := runColdStart(t)
		if t.Failed() {
			return
		}
		if len(cs.readyClient) == 0 || len(cs.liveClient) == 0 {
			t.Logf("burst %d: %d readiness and %d liveness answers ended while init ran: nothing to measure", attempt, len(cs.readyClient), len(cs.liveClient))
			continue
		}
		measured++
		t.Logf("burst %d: %s", attempt, cs)
		if pace := cs.liveP99()*3/2 + 10*time.Millisecond; cs.readyP99() > pace {
			t.Errorf("readiness p99 %s at the client fell behind liveness's in the same burst (%s): over %s", cs.readyP99(), cs.liveP99(), pace)
			return
		}
		// The handler's own time is wall-clock time too, which a busy
		// machine stretches (472 ms once, under -race and four busy
		// loops): it is held to the bound as the client's is.
		if cs.handlerP99() < readyBound && (raceEnabled || cs.readyP99() < readyBound) {
			return
		}
	}
	if measured == 0 {
		t.Fatalf("in %d bursts, no readiness answer ended while init ran", attempts)
	}
	t.Logf("no burst met %s both at the client and in the handler, but in each readiness kept pace with liveness, which never touches init: this machine was too busy to measure the bound (the bursts' figures are logged above)", readyBound)
}

// coldStart is what one burst at a cold server measured: at the client, the
// readiness answers that ended while init ran, and liveness answers from the
// same window as a control that never touches init; in the handler, every
// readiness request of the burst.
type coldStart struct {
	readyClient, readyHandler, liveClient []time.Duration
}

func (cs coldStart) readyP99() time.Duration   { _, p99 := percentiles(cs.readyClient); return p99 }
func (cs coldStart) handlerP99() time.Duration { _, p99 := percentiles(cs.readyHandler); return p99 }
func (cs coldStart) liveP99() time.Duration    { _, p99 := percentiles(cs.liveClient); return p99 }

func (cs coldStart) String() string {
	r50, r99 := percentiles(cs.readyClient)
	h50, h99 := percentiles(cs.readyHandler)
	l50, l99 := percentiles(cs.liveClient)
	return fmt.Sprintf("readiness while init ran: %d answers; at the client p50 %s, p99 %s; in the handler p50 %s, p99 %s; liveness at the client p50 %s, p99 %s",
		len(cs.readyClient), r50, r99, h50, h99, l50, l99)
}

// heldInit's Init waits for release: a GPU whose init the test ends.
type heldInit struct {
	driver.Backend
	release <-chan struct{}
}

func (h heldInit) Init(ctx context.Context) error {
	<-h.release
	return h.Backend.Init(ctx)
}

func (h heldInit) Unwrap() driver.Backend { return h.Backend }

type answer struct {
	path    string
	code    int
	body    []byte
	took    time.Duration
	endedAt time.Time
	err     error
}

// runColdStart starts a cold server over real TCP, opens a connection per
// request with liveness requests, then sends 250 readiness, 250 status,
// 500 draw and 100 liveness requests at once. It asserts what must hold in
// every burst and returns the timings.
func runColdStart(t *testing.T) coldStart {
	t.Helper()
	release := make(chan struct{})
	counting := &devicetest.Counting{Backend: heldInit{sim.New(), release}}
	rt := device.New(counting)
	srv, err := newServer(rt, 42, quietLogger())
	require.NoError(t, err)
	defer shutDown(srv)
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
	transport := &http.Transport{MaxIdleConnsPerHost: 1100}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	const perKind = 500
	// Open the connections first (liveness never initializes), so that the
	// burst measures the server, not a thousand TCP handshakes at once.
	var warm sync.WaitGroup
	for range 2*perKind + perKind/5 {
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
	paths := make([]string, 0, 2*perKind+perKind/5)
	for i := range perKind {
		paths = append(paths, map[bool]string{true: health.ReadyPath, false: health.StatusPath}[i%2 == 0], "/v1/draw?n=16")
		if i%5 == 0 {
			paths = append(paths, health.LivePath)
		}
	}
	answers := make([]answer, len(paths))
	start := make(chan struct{})
	var readyAnswers, liveAnswers atomic.Int64
	enough := make(chan struct{}, 1)
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
			switch path {
			case health.ReadyPath:
				readyAnswers.Add(1)
			case health.LivePath:
				liveAnswers.Add(1)
			}
			if readyAnswers.Load() >= 100 && liveAnswers.Load() >= 10 {
				select {
				case enough <- struct{}{}:
				default:
				}
			}
		})
	}
	started.Wait()
	close(start)
	select {
	case <-enough:
	case <-time.After(10 * time.Second): // readiness waits for init: the answers below say so
	}
	close(release)
	wg.Wait()
	initDone := rt.Stats().Finished
	require.False(t, initDone.IsZero())

	assert.Equal(t, int64(1), counting.Calls().Init, "exactly one backend Init")
	var cs coldStart
	var offsets []uint64
	for _, a := range answers {
		require.NoError(t, a.err, a.path)
		switch a.path {
		case health.ReadyPath:
			if a.endedAt.Before(initDone) {
				assert.Equal(t, http.StatusServiceUnavailable, a.code)
				cs.readyClient = append(cs.readyClient, a.took)
			}
		case health.LivePath:
			assert.Equal(t, http.StatusOK, a.code)
			if a.endedAt.Before(initDone) {
				cs.liveClient = append(cs.liveClient, a.took)
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
	slices.Sort(offsets)
	for i, o := range offsets {
		assert.Equal(t, uint64(16*i), o, "every draw had a stream position of its own")
	}
	handlerMu.Lock()
	cs.readyHandler = handlerTimes
	handlerMu.Unlock()
	return cs
}
