//go:build linux && cgo

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPUHost builds the fake libcuda, libcurand and NVML, and returns the
// environment that serves over them, with the curand call log and NVML's
// events file.
func fakeGPUHost(t *testing.T, env ...string) ([]string, fakedriver.CallLog, string) {
	t.Helper()
	curandLog := fakedriver.NewCallLog(t)
	events := filepath.Join(t.TempDir(), "events")
	require.NoError(t, os.WriteFile(events, nil, 0o644))
	return slices.Concat([]string{"GPUINIT_CUDA_LIBRARY=" + fakedriver.Build(t, fakedriver.CUDA),
		"GPUINIT_CURAND_LIBRARY=" + fakedriver.Build(t, fakedriver.CURAND),
		"GPUINIT_NVML_LIBRARY=" + fakedriver.Build(t, fakedriver.NVML),
		"GPUINIT_FAKE_CURAND_LOG=" + string(curandLog), "GPUINIT_FAKE_NVML_EVENTS=" + events}, fakedriver.ShortWaits, env), curandLog, events
}

// drawResponse is one /v1/draw's answer.
type drawResponse struct {
	code int
	body string
	res  drawResult
}

func drawOn(t *testing.T, ctx context.Context, url string) drawResponse {
	t.Helper()
	if _, ok := ctx.Deadline(); !ok {
		// No test waits for ever on a draw it expected to answer.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return drawResponse{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := drawResponse{code: resp.StatusCode, body: string(b)}
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, &out.res))
	}
	return out
}

// notReadyAfter polls readiness until it answers 503 and returns how long
// after start that was.
func notReadyAfter(t *testing.T, url string, start time.Time) time.Duration {
	t.Helper()
	require.Eventually(t, func() bool { code, _ := get(t, url+health.ReadyPath); return code == http.StatusServiceUnavailable },
		10*time.Second, time.Millisecond)
	return time.Since(start)
}

// TestAHungDraw runs the server over a libcurand whose second device draw
// (on device 0) never returns: the draw's device is lost as hung once its
// deadline has passed, the other device serves, draws queued behind the hung
// one give up when their requests end, HEAD draws nothing, liveness fails only with
// -restart-on-device-loss, and SIGTERM ends the server within its grace plus
// a second. (Before call deadlines, readiness and liveness stayed 200, every
// later draw queued behind the hung one, and shutdown waited for ever.)
func TestAHungDraw(t *testing.T) {
	t.Parallel() // servers of their own, mostly waiting
	// The grace is short: the server waits it out for the hung draw's
	// request, and the bound below is the grace plus a second whatever it is.
	const deadline, grace = 300 * time.Millisecond, 250 * time.Millisecond
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "-restart-on-device-loss"}[restart], func(t *testing.T) {
			t.Parallel()
			env, curandLog, _ := fakeGPUHost(t, "GPUINIT_FAKE_CURAND_HANG_DRAW=2")
			args := []string{"-backend", "cuda", "-call-deadline", deadline.String(), "-shutdown-grace", grace.String(), "-log-level", "debug"}
			if restart {
				args = append(args, "-restart-on-device-loss")
			}
			url, cmd, log := startServerLogged(t, env, args...)
			ctx := context.Background()
			first := drawOn(t, ctx, url+"/v1/draw?device=0&n=4")
			require.Equal(t, http.StatusOK, first.code, first.body)
			require.Equal(t, "device", first.res.Source)

			hung := make(chan drawResponse, 1)
			start := time.Now()
			go func() { hung <- drawOn(t, ctx, url+"/v1/draw?device=0&n=4") }() // cut off by the shutdown
			require.Eventually(t, func() bool { return len(curandLog.Lines(t, "curandGenerate hangs")) == 1 }, 10*time.Second, time.Millisecond)

			// Queued behind the hung draw, before its deadline: it gives up
			// when its own request ends.
			queuedCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			queued := drawOn(t, queuedCtx, url+"/v1/draw?device=0&n=4")
			cancel()
			assert.NotEqual(t, http.StatusOK, queued.code)
			log.WaitFor(t, "draw gave up waiting")

			// The loss comes when the deadline passes: not before it, and,
			// as device/internal/watch's TestACallIsReportedHungAtItsDeadline
			// proves on synctest's clock, within 25 ms after it. Read off
			// the wall clock here, through HTTP and another process, the
			// upper bound is only one a loaded machine never reaches (447 ms
			// was seen for a 300 ms deadline under four busy loops).
			took := notReadyAfter(t, url, start)
			assert.GreaterOrEqual(t, took, deadline, "not lost before the deadline")
			assert.Less(t, took, deadline+5*time.Second, "from the hung draw's start to readiness 503")
			t.Logf("from the hung draw's start to readiness 503: %v (deadline %v)", took, deadline)
			code, body := get(t, url+health.ReadyPath)
			assert.Equal(t, http.StatusServiceUnavailable, code)
			assert.Contains(t, body, "device 0 lost")
			assert.Contains(t, body, "(deadline)")
			code, _ = get(t, url+health.LivePath)
			assert.Equal(t, map[bool]int{false: http.StatusOK, true: http.StatusServiceUnavailable}[restart], code)

			later := time.Now()
			lost := drawOn(t, ctx, url+"/v1/draw?device=0&n=4")
			assert.Equal(t, http.StatusServiceUnavailable, lost.code)
			assert.Contains(t, lost.body, "lost")
			assert.Less(t, time.Since(later), time.Second, "a draw on the lost device fails at once")

			// Device 1 serves; HEAD draws nothing on it.
			d1 := drawOn(t, ctx, url+"/v1/draw?device=1&n=4")
			require.Equal(t, http.StatusOK, d1.code, "the other device serves: %s", d1.body)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Head(url + "/v1/draw?device=1&n=4")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			d1b := drawOn(t, ctx, url+"/v1/draw?device=1&n=4")
			require.Equal(t, http.StatusOK, d1b.code, d1b.body)
			assert.Equal(t, d1.res.Offset+4, d1b.res.Offset, "HEAD did not advance the stream")

			st := status(t, url)
			require.Len(t, st.Lost, 1)
			assert.Equal(t, "deadline", st.Lost[0].Source)
			assert.Equal(t, 0, st.Lost[0].Ordinal)
			assert.NotContains(t, st.ErrorsReported, 1, "device 1's draws reported nothing")

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			signalled := time.Now()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(grace + 5*time.Second):
				t.Fatal("SIGTERM did not stop the server")
			}
			assert.Less(t, time.Since(signalled), grace+time.Second, "SIGTERM exits within the grace plus a second")
			t.Logf("SIGTERM to exit with a draw hung: %v (grace %v)", time.Since(signalled), grace)
			select {
			case r := <-hung:
				assert.NotEqual(t, http.StatusOK, r.code, "the hung draw never answered 200")
			case <-time.After(5 * time.Second):
				t.Error("the hung draw's request was never cut off")
			}
		})
	}
}

// TestXidsOverTheFakeNVML injects Xids through the fake NVML's events file:
// 79 loses device 1 alone, named, well before NVML's 1 s wait ends; 13 on device 0
// is counted and the server stays ready on it.
func TestXidsOverTheFakeNVML(t *testing.T) {
	t.Parallel() // a server of its own, mostly waiting
	env, _, events := fakeGPUHost(t)
	url, _ := startServer(t, env, "-backend", "cuda")
	ctx := context.Background()
	first := drawOn(t, ctx, url+"/v1/draw?device=1&n=4")
	require.Equal(t, http.StatusOK, first.code, first.body)
	require.Eventually(t, func() bool {
		st := status(t, url)
		return len(st.Devices) == 2 && st.Devices[0].Health != nil && st.Devices[0].Health.Watched &&
			st.Devices[1].Health != nil && st.Devices[1].Health.Watched
	}, 10*time.Second, 5*time.Millisecond, "both devices are watched")
	st := status(t, url)
	inject := func(line string) {
		f, err := os.OpenFile(events, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(line + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}

	inject("xid " + st.Devices[0].UUID + " 13")
	require.Eventually(t, func() bool { return status(t, url).Devices[0].Health.Counted["xid 13"] == 1 }, 10*time.Second, 5*time.Millisecond)
	code, _ := get(t, url+health.ReadyPath)
	assert.Equal(t, http.StatusOK, code, "an application's Xid leaves the server ready")

	start := time.Now()
	inject("xid " + st.Devices[1].UUID + " 79")
	// The fake's wait takes the line as soon as it is appended, so the Xid
	// is seen at once, not when NVML's 1 s wait would end. Half that wait
	// keeps the test able to tell the two apart through HTTP and another
	// process on a loaded machine; the Runtime's own path is held to its
	// figure on synctest's clock (device/health's
	// TestAnXidThatNeedsAResetTurnsReadinessOffWithin100ms).
	took := notReadyAfter(t, url, start)
	assert.Less(t, took, 500*time.Millisecond, "from the Xid to readiness 503, within half of NVML's wait")
	t.Logf("from the Xid to readiness 503: %v", took)
	_, body := get(t, url+health.ReadyPath)
	assert.Contains(t, body, "device 1 lost")
	assert.Contains(t, body, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS")

	d0 := drawOn(t, ctx, url+"/v1/draw?device=0&n=4")
	assert.Equal(t, http.StatusOK, d0.code, "device 0 serves: %s", d0.body)
	d1 := drawOn(t, ctx, url+"/v1/draw?device=1&n=4")
	assert.Equal(t, http.StatusServiceUnavailable, d1.code)
	assert.True(t, strings.Contains(d1.body, "Xid 79"), d1.body)
	st = status(t, url)
	require.Len(t, st.Lost, 1)
	assert.Equal(t, "xid", st.Lost[0].Source)
	assert.Equal(t, 79, st.Lost[0].Error.Code)
}
