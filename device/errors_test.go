package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
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
	noBackend := childWithoutTheBackend(t) // before retriedHang sets GPUINIT_SIM_FAIL
	msgs := map[string]error{
		"ReportError before init":             fresh.ReportError(3, errors.New("cuLaunchKernel failed")),
		"an unknown backend":                  unknown,
		"auto with no usable GPU":             openIn(t, &g, "auto").Init(ctx),
		"a named backend's failure":           openIn(t, &g, "hip").Init(ctx),
		"a hung child retried until RetryFor": retriedHang(t),
		"a panic in the driver's init":        device.New(sim.New(sim.WithFailure(sim.Panic))).Init(ctx),
		"an init that called Goexit":          device.New(goexitInit{sim.New()}).Init(ctx),
		"a child without the backend":         noBackend,
	}
	for what, err := range msgs {
		if !assert.Error(t, err, what) {
			continue
		}
		msg := err.Error()
		// The prefix is device's, or the backend's for its own failure. A
		// panic's value is quoted as it is.
		said, _, _ := strings.Cut(msg, "panic: ")
		prefixes := packagePrefix().FindAllStringIndex(said, -1)
		assert.Len(t, prefixes, 1, "%s: one package's prefix, once: %q", what, msg)
		assert.True(t, len(prefixes) > 0 && prefixes[0][0] == 0, "%s: the prefix leads: %q", what, msg)
		assert.Less(t, len(msg), 300, "%s: a message a person reads once: %q", what, msg)
	}
	assert.ErrorIs(t, msgs["ReportError before init"], device.ErrInvalidDevice)
	assert.ErrorIs(t, msgs["ReportError before init"], driver.ErrNotInitialized)
	assert.ErrorIs(t, msgs["an init that called Goexit"], lazy.ErrGoexit)
	var pe *lazy.PanicError
	assert.ErrorAs(t, msgs["a panic in the driver's init"], &pe)
	var nb *device.NoBackendError
	if assert.ErrorAs(t, msgs["auto with no usable GPU"], &nb) {
		assert.Len(t, nb.Tried, 2, "each backend's reason is structured, not concatenated")
		assert.Contains(t, msgs["auto with no usable GPU"].Error(), "auto tried cuda too")
	}
}

// packagePrefix finds a package's prefix: at the start of a message, or of
// a wrapped one (after ": " or "(").
var packagePrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|: |\()(?:lazy|device|rng|preflight|sim|cuda|hip): `)
})

// goexitInit is a backend whose Init calls runtime.Goexit.
type goexitInit struct{ driver.Backend }

func (goexitInit) Init(context.Context) error { runtime.Goexit(); return nil }
func (g goexitInit) Unwrap() driver.Backend   { return g.Backend }

// childWithoutTheBackend is the failure of a Runtime whose preflight child
// is a program without its backend: this test binary, whose registry has
// no "gpu2".
func childWithoutTheBackend(t *testing.T) error {
	var g device.Registry
	registerGPU(&g, "gpu2", 10)
	rt := openIn(t, &g, "gpu2")
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	require.NoError(t, rt.UsePreflight(device.Preflight{Deadline: 10 * time.Second}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	return rt.Init(context.Background())
}

// retriedHang is the failure of a Runtime whose preflight child hung, and
// whose retries ran out at once.
func retriedHang(t *testing.T) error {
	rt, err := openSimWith(t, map[string]string{sim.EnvFail: string(sim.Hang)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"},
		Deadline: 100 * time.Millisecond, RetryFor: time.Nanosecond}))
	t.Setenv("GPUINIT_PREFLIGHT", "")
	return rt.Init(context.Background())
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

// matches returns a check that errors.As finds a T in an error.
func matches[T any]() func(error) bool {
	return func(err error) bool { var target T; return errors.As(err, &target) }
}

// evidenced is what the health status asks of an initialization failure for
// the host's evidence of its class.
type evidenced interface{ Evidence() string }

// openSimWith opens the registered "sim", which reads GPUINIT_SIM_* at Open, in
// a registry of its own, with env set as a user sets it.
func openSimWith(t *testing.T, env map[string]string) (*device.Runtime, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var g device.Registry
	g.Register(sim.Registration())
	return g.Open("sim")
}

// initSim is openSimWith's Runtime's Init error.
func initSim(t *testing.T, env map[string]string) error {
	t.Helper()
	rt, err := openSimWith(t, env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	return rt.Init(context.Background())
}

// readySim is an initialized sim Runtime with two devices.
func readySim(t *testing.T) *device.Runtime {
	t.Helper()
	rt, err := openSimWith(t, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	require.NoError(t, rt.Init(context.Background()))
	return rt
}

// bareBackend hides every optional interface of the backend it holds.
type bareBackend struct{ driver.Backend }

// hungCall is the refusal of a call on a device that a call past the call
// deadline lost, in a synctest bubble so that the deadline is the bubble's.
func hungCall(t *testing.T) (refused error) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(ctx)
		rt.SetCallDeadline(100 * time.Millisecond)
		require.NoError(t, rt.Init(ctx))
		release, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); _ = rt.Do(ctx, 0, func() error { <-release; return nil }) }()
		for len(rt.Stats().Lost) == 0 {
			time.Sleep(time.Millisecond) // the bubble's clock: the monitor's scans run
		}
		refused = rt.Do(ctx, 0, func() error { return nil })
		close(release)
		<-done
	})
	return refused
}
