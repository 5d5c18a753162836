package device_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEachMessageHasOnePrefix: the errors a server logs say one package's
// prefix, at the outermost wrap only ("lazy:" and "device:" inside a
// backend's message once made them read "lazy: initialization failed:
// device: no usable GPU backend (auto tried cuda: preflight child 1: ...").
func TestEachMessageHasOnePrefix(t *testing.T) {
	var g device.Registry
	registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDriver))
	registerGPU(&g, "hip", 20, sim.WithFailure(sim.NoDevice))
	g.Register(simRegistration(newSim))
	ctx := context.Background()
	fresh := openIn(t, &g, "sim")
	_, unknown := g.Open("bogus")
	msgs := map[string]error{
		"ReportError before init":   fresh.ReportError(3, errors.New("cuLaunchKernel failed")),
		"an unknown backend":        unknown,
		"auto with no usable GPU":   openIn(t, &g, "auto").Init(ctx),
		"a named backend's failure": openIn(t, &g, "hip").Init(ctx),
	}
	for what, err := range msgs {
		if !assert.Error(t, err, what) {
			continue
		}
		msg := err.Error()
		for _, prefix := range []string{"lazy: ", "device: ", "rng: "} {
			assert.LessOrEqual(t, strings.Count(msg, prefix), 1, "%s: %q", what, msg)
		}
		assert.Less(t, len(msg), 300, "%s: a message a person reads once: %q", what, msg)
	}
	assert.ErrorIs(t, msgs["ReportError before init"], device.ErrInvalidDevice)
	assert.ErrorIs(t, msgs["ReportError before init"], driver.ErrNotInitialized)
	var nb *device.NoBackendError
	if assert.ErrorAs(t, msgs["auto with no usable GPU"], &nb) {
		assert.Len(t, nb.Tried, 2, "each backend's reason is structured, not concatenated")
		assert.Contains(t, msgs["auto with no usable GPU"].Error(), "auto tried cuda too")
	}
}

func TestCodeTableNamesEveryCode(t *testing.T) {
	table := &driver.CodeTable{Backend: "x", Unnamed: "xResult", Codes: map[int]driver.Code{
		7: {Name: "X_NO_DEVICE", Sentinel: device.ErrNoDevice, Hint: "plug one in"},
	}}
	for _, tc := range []struct {
		code       int
		driverName string
		wantName   string
		wantIs     bool
	}{
		{7, "", "X_NO_DEVICE", true},                  // the table names it
		{7, "xErrorNoDevice", "xErrorNoDevice", true}, // the driver's own name wins
		{8, "", "xResult", false},                     // nobody names it
	} {
		e := table.Error("xInit", tc.code, tc.driverName, "msg")
		assert.Equal(t, tc.wantName, e.Name)
		assert.Equal(t, tc.wantIs, errors.Is(e, device.ErrNoDevice))
		assert.Equal(t, "x", e.Backend)
		assert.Equal(t, "xInit", e.Op)
		assert.Equal(t, tc.code, e.Code)
		if tc.wantIs {
			assert.Equal(t, "x: xInit failed: "+tc.wantName+" (7): msg; plug one in", e.Error())
		} else {
			assert.Empty(t, e.Hint)
		}
	}
	loader := &device.DriverError{Backend: "cuda", Op: "dlopen", Message: "libcuda.so.1: cannot open shared object file", Hint: "install it"}
	assert.Equal(t, "cuda: dlopen failed: libcuda.so.1: cannot open shared object file; install it", loader.Error(),
		"a loader failure has no code to print")
}

// lineOfNext returns the line number after its caller's.
func lineOfNext() int {
	_, _, line, _ := runtime.Caller(1)
	return line + 1
}

func TestNoBackendErrorMatchesOneSummary(t *testing.T) {
	notCompiled := fmt.Errorf("%w: built without cgo", device.ErrNotCompiled)
	notFound := &device.DriverError{Backend: "x", Op: "dlopen", Sentinel: device.ErrDriverNotFound}
	noDevice := &device.DriverError{Backend: "x", Op: "cuInit", Code: 100, Sentinel: device.ErrNoDevice}
	mismatch := &device.DriverError{Backend: "x", Op: "cuInit", Code: 803, Sentinel: device.ErrDriverMismatch}
	for _, tc := range []struct {
		name  string
		tried []error
		want  error
	}{
		{"nothing compiled in", []error{notCompiled, notCompiled}, device.ErrNotCompiled},
		{"no library loaded", []error{notFound, notCompiled}, device.ErrDriverNotFound},
		{"a driver loaded, no device", []error{notFound, noDevice}, device.ErrNoDevice},
		{"a driver that differs from the kernel's, the other missing: the lead's kind", []error{mismatch, notFound}, device.ErrDriverMismatch},
		{"no library, then a driver that answered: the answer's kind", []error{notFound, mismatch}, device.ErrDriverMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &device.NoBackendError{}
			for i, err := range tc.tried {
				e.Tried = append(e.Tried, device.BackendFailure{Backend: fmt.Sprint(i), Err: err})
			}
			for _, s := range []error{device.ErrNotCompiled, device.ErrDriverNotFound, device.ErrNoDevice, device.ErrDriverMismatch} {
				assert.Equal(t, s == tc.want, errors.Is(e, s), "errors.Is(%v)", s)
			}
			var de *device.DriverError
			assert.Equal(t, tc.want != device.ErrNotCompiled, errors.As(e, &de), "each backend's DriverError is reachable by errors.As")
		})
	}
}

// failingInit is a GPU backend whose Init fails with err after its driver
// loaded (version, when not 0, is what it read).
type failingInit struct {
	*sim.Backend
	name    string
	err     error
	version int
}

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

func (f failingInit) Name() string                { return f.name }
func (f failingInit) Init(context.Context) error  { return f.err }
func (f failingInit) DriverVersion() (int, error) { return f.version, nil }
func (f failingInit) Unwrap() driver.Backend      { return f.Backend }
