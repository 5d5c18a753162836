package device_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingInit is a GPU backend whose Init fails with err after its driver
// loaded (version, when not 0, is what it read).
type failingInit struct {
	*sim.Backend
	name    string
	err     error
	version int
}

func (f failingInit) Name() string                { return f.name }
func (f failingInit) Init(context.Context) error  { return f.err }
func (f failingInit) DriverVersion() (int, error) { return f.version, nil }
func (f failingInit) Unwrap() driver.Backend      { return f.Backend }
func registerFailing(g *device.Registry, f failingInit, rank int) {
	g.Register(driver.Registration{Name: f.name, GPU: true, AutoRank: rank,
		Open: func() (driver.Backend, error) { return f, nil }})
}

// TestTheBackendThatGotFurthestLeadsAutosError: on a host with only ROCm,
// cuda's library is missing and hip's driver answered; hip's error leads,
// so that the combined error's first *DriverError (what health.ErrorOf
// reads for op, code and hint) is hip's, and each failure carries the
// driver version its backend read.
func TestTheBackendThatGotFurthestLeadsAutosError(t *testing.T) {
	noLibrary := &device.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcuda.so.1: not found",
		Hint: "install the NVIDIA driver", Sentinel: device.ErrDriverNotFound}
	noDevice := &device.DriverError{Backend: "hip", Op: "hipInit", Code: 100, Name: "hipErrorNoDevice",
		Hint: "check /dev/kfd", Sentinel: device.ErrNoDevice}
	mismatch := &device.DriverError{Backend: "hip", Op: "dlsym hipMalloc", Sentinel: device.ErrDriverMismatch}
	for _, tc := range []struct {
		name     string
		cuda     error
		hip      error
		version  int // hip's
		lead     string
		leadOp   string
		sentinel error
	}{
		{"ROCm only: hip's driver answered", noLibrary, noDevice, 50221153, "hip", "hipInit", device.ErrNoDevice},
		{"neither library: the first tried", noLibrary, &device.DriverError{Backend: "hip", Op: "dlopen", Sentinel: device.ErrDriverNotFound}, 0, "cuda", "dlopen", device.ErrDriverNotFound},
		{"a mismatched library beats a missing one", noLibrary, mismatch, 0, "hip", "dlsym hipMalloc", device.ErrDriverMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g device.Registry
			registerFailing(&g, failingInit{sim.New(), "cuda", tc.cuda, 0}, 10)
			registerFailing(&g, failingInit{sim.New(), "hip", tc.hip, tc.version}, 20)
			auto := openIn(t, &g, "auto")
			err := auto.Init(context.Background())
			var nb *device.NoBackendError
			require.ErrorAs(t, err, &nb)
			assert.Equal(t, tc.lead, nb.Lead().Backend)
			var de *device.DriverError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.leadOp, de.Op, "errors.As finds the leading backend's error first")
			assert.ErrorIs(t, err, tc.sentinel)
			passed := auto.Stats().PassedOver
			require.Len(t, passed, 2)
			assert.Equal(t, tc.version, passed[1].DriverVersion)
			assert.Equal(t, tc.version, nb.Tried[1].DriverVersion)
			assert.Zero(t, passed[0].DriverVersion)
			assert.True(t, errors.Is(nb.Lead().Err, tc.hip) || errors.Is(nb.Lead().Err, tc.cuda))
		})
	}
}
