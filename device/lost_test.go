package device_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStickyErrorsLoseTheDeviceOthersAreCounted(t *testing.T) {
	ctx := context.Background()
	s := sim.New()
	r := device.New(s)
	require.NoError(t, r.Init(ctx))
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.NoError(t, r.ReportError(0, errors.New("a timeout of the engine's own")), "not a driver error: counted")
	de, err := r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 1)
	assert.NoError(t, err)
	assert.False(t, de.Sticky)
	assert.False(t, (len(r.Stats().Lost) > 0))
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts)
	de, err = r.ReportDriverCode(0, "cuMemcpyHtoD_v2", 0)
	assert.Nil(t, de, "code 0 is success")
	assert.NoError(t, err)
	assert.Equal(t, map[int]int64{0: 2}, r.Stats().ErrorCounts, "and records nothing")

	s.LoseDevice(1, 700)
	doErr := r.Do(ctx, 1, func() error { return nil })
	require.Error(t, doErr)
	assert.ErrorIs(t, r.ReportError(1, doErr), device.ErrDeviceLost, "700 is sticky: device 1 is lost")
	assert.ErrorIs(t, r.ReportError(1, nil), device.ErrDeviceLost, "and stays lost")
	assert.NoError(t, r.ReportError(0, nil), "device 0 is not")
	de, err = r.ReportDriverCode(0, "cuLaunchKernel", 719)
	assert.True(t, de.Sticky)
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", de.Name)
	var lostErr device.LostDevice
	require.ErrorAs(t, err, &lostErr)
	assert.Equal(t, 0, lostErr.Ordinal)
	lost := r.Stats().Lost
	require.Len(t, lost, 2)
	assert.Equal(t, 0, lost[0].Ordinal)
	assert.Equal(t, 719, lost[0].Err.Code)
	assert.Equal(t, 700, lost[1].Err.Code)
	assert.ErrorIs(t, lost[1], device.ErrDeviceLost)
	assert.Contains(t, lost[1].Error(), "device 1 lost")
}

// TestReportsOfOrdinalsTheRuntimeHasNotAreRefused: on a host of two devices,
// reports for -1, 2 and 1<<30, sticky or not, raw codes or errors, are
// refused with ErrInvalidDevice, record nothing, and readiness stays 200.
func TestReportsOfOrdinalsTheRuntimeHasNotAreRefused(t *testing.T) {
	ctx := context.Background()
	rt := device.New(sim.New(sim.WithDevices(2)))
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(ctx))
	h := health.New(rt, health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer h.Close()
	ready := func() int {
		rec := httptest.NewRecorder()
		h.Ready().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	require.Equal(t, http.StatusOK, ready())

	sticky := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Sticky: true}
	plain := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
	for _, ordinal := range []int{-1, 2, 1 << 30} {
		assert.ErrorIs(t, rt.ReportError(ordinal, sticky), device.ErrInvalidDevice, "ReportError(%d, sticky)", ordinal)
		assert.ErrorIs(t, rt.ReportError(ordinal, plain), device.ErrInvalidDevice, "ReportError(%d, plain)", ordinal)
		for _, code := range []int{700, 1} { // sticky, then not, in CUDA's table
			de, err := rt.ReportDriverCode(ordinal, "cuLaunchKernel", code)
			assert.ErrorIs(t, err, device.ErrInvalidDevice, "ReportDriverCode(%d, %d)", ordinal, code)
			require.NotNil(t, de)
			assert.Equal(t, code, de.Code)
		}
	}
	assert.Empty(t, rt.Stats().Lost, "nothing is lost")
	assert.Empty(t, rt.Stats().ErrorCounts, "nothing is counted")
	assert.NoError(t, rt.CheckDevice(0))
	assert.NoError(t, rt.CheckDevice(1))
	assert.Equal(t, http.StatusOK, ready(), "readiness stays on")
}
