package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheCanaryFindsADeviceThatNoLongerWorks: a device whose calls fail with
// a sticky error, which no engine call has met yet, is found by the canary
// within a period or so, off the probe path; the other device's canary
// passes and the status shows both.
func TestTheCanaryFindsADeviceThatNoLongerWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 10 * time.Millisecond
		s, rt := watchedSim(t)
		h := health.New(rt, quiet, health.WithCanary(period))
		defer h.Close()
		code, _ := probe(t, h.Ready()) // ready: the canary starts
		require.Equal(t, http.StatusOK, code)
		require.Eventually(t, func() bool {
			st := status(t, h)
			return st.Devices[0].Canary != nil && st.Devices[1].Canary != nil
		}, 10*time.Second, time.Millisecond)
		st := status(t, h)
		assert.True(t, st.Devices[0].Canary.OK)
		assert.True(t, st.Devices[1].Canary.OK)

		start := time.Now()
		s.LoseDevice(1, 719)
		took := untilNotReady(t, h, start)
		assert.Less(t, took, period+100*time.Millisecond)
		t.Logf("from the device's failure to readiness 503, by the canary alone: %v (period %v)", took, period)
		st = status(t, h)
		require.Len(t, st.Lost, 1)
		assert.Equal(t, "canary", st.Lost[0].Source)
		assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", st.Lost[0].Error.Name)
		assert.True(t, st.Devices[0].Canary.OK, "device 0 still passes")

		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		ready := h.Ready()
		ready.ServeHTTP(rec, req)
		assert.Zero(t, testing.AllocsPerRun(100, func() { rec.Body.Reset(); ready.ServeHTTP(rec, req) }),
			"readiness allocates nothing with the canary running")
	})
}

func TestWithoutTheCanaryOnlyACallFindsTheDevice(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	s.LoseDevice(1, 719)
	code, _ := probe(t, h.Ready())
	assert.Equal(t, http.StatusOK, code, "nothing has touched device 1 since it failed")
	assert.Nil(t, status(t, h).Devices[1].Canary)
	require.ErrorIs(t, rt.Canary(context.Background(), 1), device.ErrDeviceLost, "one canary, run by hand, finds it")
	code, _ = probe(t, h.Ready())
	assert.Equal(t, http.StatusServiceUnavailable, code)
}
