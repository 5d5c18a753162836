package device_test

import (
	"context"
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
