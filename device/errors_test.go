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

// TestEverySentinelAndTypeAUserMatchesStillMatches: each sentinel and error
// type of device and device/driver, produced as a user meets it through the
// public API, still matches errors.Is or errors.As, and ClassOf still gives
// its class. The table is the list of what users match; a change of the
// errors' shape must keep every row.
//
// Sentinels with no row of their own, and why: none. The type that is not
// exported (failure) is matched only through the rows' exported types and
// the Evidence interface.
func TestEverySentinelAndTypeAUserMatchesStillMatches(t *testing.T) {
	ctx := context.Background()
	// says is the whole message of the rows whose message is the library's
	// alone (no driver's text, time or path): the context first, after one
	// prefix, and the sentinel last.
	says := map[string]string{
		"an ordinal past the devices is ErrInvalidDevice": "device: ordinal 2: sim has 2 devices, valid ordinals are 0..1: invalid device ordinal",
		"a negative ordinal is ErrInvalidDevice":          "device: ordinal -1: ordinals start at 0: invalid device ordinal",
		"a report before init is ErrInvalidDevice and ErrNotInitialized": "device: report not recorded (the error reported: cuLaunchKernel failed): " +
			"ordinal 0: the sim runtime has not initialized, so its devices are not known yet: invalid device ordinal",
		"auto's driver version before its choice is ErrNotInitialized": "device: auto has not chosen among [cuda] yet: not initialized yet",
		"a backend the build could not have is ErrNotCompiled":         "device: backend cuda is not in this binary: built with CGO_ENABLED=0: backend not compiled in",
		"a backend without free memory is ErrNotSupported":             "device: backend sim cannot read free memory: not supported by this backend",
		"a GPUINIT_SIM_* value that does not parse is ErrBadSetting":   `sim: GPUINIT_SIM_DEVICES="lots": want a whole number of devices from 0 to 64: bad setting`,
		"a misspelt GPUINIT_ variable is ErrBadSetting": "device: GPUINIT_SIM_DEVICE is set, but gpuinit reads no such variable " +
			"(did you mean GPUINIT_SIM_DEVICES?): bad setting",
		"an unknown backend name is ErrBadSetting": `device: unknown backend "bogus": the backends are auto: bad setting`,
		"auto passing over a backend whose devices the host shows is ErrOtherVendor": "device: hip was not tried: the host shows its devices too (/dev/kfd), " +
			`and auto chooses one backend per process (cuda); open "hip" beside it, or list both with device.Inventory: another vendor's GPUs are present`,
		"a Runtime after Shutdown is ErrClosed": "device: the Runtime is closed",
	}
	checked := 0
	for _, tc := range []struct {
		name    string
		produce func(t *testing.T) error
		is      []error
		as      []func(error) bool
		class   device.Class
	}{
		{"a driver that sees no device is ErrNoDevice and a *DriverError",
			func(t *testing.T) error { return initSim(t, map[string]string{sim.EnvDevices: "0"}) },
			[]error{device.ErrNoDevice, driver.ErrNoDevice},
			[]func(error) bool{matches[*device.DriverError](), matches[*lazy.InitError]()}, device.ClassNoGPUHere},
		{"a driver library that does not load is ErrDriverNotFound",
			func(t *testing.T) error { return initSim(t, map[string]string{sim.EnvFail: string(sim.NoDriver)}) },
			[]error{device.ErrDriverNotFound}, []func(error) bool{matches[*device.DriverError]()}, device.ClassNoGPUHere},
		{"a driver whose parts differ is ErrDriverMismatch",
			func(t *testing.T) error {
				return initSim(t, map[string]string{sim.EnvFail: string(sim.DriverMismatch)})
			},
			[]error{device.ErrDriverMismatch}, []func(error) bool{matches[*device.DriverError]()}, device.ClassNeedsOperator},
		{"a system not ready yet is ErrNotReady and ErrNoDevice",
			func(t *testing.T) error { return initSim(t, map[string]string{sim.EnvFail: string(sim.NotReady)}) },
			[]error{driver.ErrNotReady, device.ErrNoDevice}, []func(error) bool{matches[*device.DriverError]()}, device.ClassNotYet},
		{"a driver below RequireDriverVersion is ErrDriverTooOld and ErrDriverMismatch",
			func(t *testing.T) error {
				rt, err := openSimWith(t, nil)
				require.NoError(t, err)
				require.NoError(t, rt.RequireDriverVersion("sim", sim.DriverVersion+1))
				return rt.Init(ctx)
			},
			[]error{driver.ErrDriverTooOld, device.ErrDriverMismatch}, []func(error) bool{matches[*device.DriverError]()}, device.ClassNoGPUHere},
		{"a driver init that panics is a *lazy.PanicError",
			func(t *testing.T) error { return initSim(t, map[string]string{sim.EnvFail: string(sim.Panic)}) },
			nil, []func(error) bool{matches[*lazy.PanicError](), matches[*lazy.InitError]()}, device.ClassNeedsOperator},
		{"an ordinal past the devices is ErrInvalidDevice",
			func(t *testing.T) error { _, err := readySim(t).Device(ctx, 2); return err },
			[]error{device.ErrInvalidDevice}, nil, device.ClassNone},
		{"a negative ordinal is ErrInvalidDevice",
			func(t *testing.T) error { return readySim(t).Do(ctx, -1, func() error { return nil }) },
			[]error{device.ErrInvalidDevice}, nil, device.ClassNone},
		{"a report before init is ErrInvalidDevice and ErrNotInitialized",
			func(t *testing.T) error {
				rt, err := openSimWith(t, nil)
				require.NoError(t, err)
				return rt.ReportError(0, errors.New("cuLaunchKernel failed"))
			},
			[]error{device.ErrInvalidDevice, driver.ErrNotInitialized}, nil, device.ClassNone},
		{"auto's driver version before its choice is ErrNotInitialized",
			func(t *testing.T) error {
				var g device.Registry
				registerGPU(&g, "cuda", 10)
				_, err := openIn(t, &g, "auto").DriverVersion()
				return err
			},
			[]error{driver.ErrNotInitialized}, nil, device.ClassNone},
		{"auto in a binary without GPU backends is ErrNotCompiled",
			func(t *testing.T) error { var g device.Registry; _, err := g.Open("auto"); return err },
			[]error{device.ErrNotCompiled}, nil, device.ClassNoGPUHere},
		{"a backend the build could not have is ErrNotCompiled",
			func(t *testing.T) error {
				var g device.Registry
				g.Register(driver.Registration{Name: "cuda", GPU: true, Unavailable: "built with CGO_ENABLED=0"})
				_, err := g.Open("cuda")
				return err
			},
			[]error{device.ErrNotCompiled}, nil, device.ClassNoGPUHere},
		{"a backend without free memory is ErrNotSupported",
			func(t *testing.T) error {
				rt := device.New(bareBackend{sim.New()})
				t.Cleanup(func() { _ = rt.Shutdown(ctx) })
				require.NoError(t, rt.Init(ctx))
				_, err := rt.Memory(ctx, 0)
				return err
			},
			[]error{device.ErrNotSupported}, nil, device.ClassNone},
		{"a sticky code reported by the engine is ErrDeviceLost and a LostDevice",
			func(t *testing.T) error {
				_, err := readySim(t).ReportDriverCode(0, "cuLaunchKernel", 700)
				return err
			},
			[]error{device.ErrDeviceLost}, []func(error) bool{matches[device.LostDevice](), matches[*device.DriverError]()},
			device.ClassNone},
		{"a call on a device a hung call lost is ErrDeviceHung and ErrDeviceLost",
			hungCall, []error{driver.ErrDeviceHung, device.ErrDeviceLost},
			[]func(error) bool{matches[device.LostDevice](), matches[*device.DriverError]()}, device.ClassNone},
		{"a GPUINIT_SIM_* value that does not parse is ErrBadSetting",
			func(t *testing.T) error {
				_, err := openSimWith(t, map[string]string{sim.EnvDevices: "lots"})
				return err
			},
			[]error{device.ErrBadSetting, driver.ErrBadSetting}, nil, device.ClassNone},
		{"a misspelt GPUINIT_ variable is ErrBadSetting",
			func(t *testing.T) error {
				_, err := openSimWith(t, map[string]string{"GPUINIT_SIM_DEVICE": "1"})
				return err
			},
			[]error{device.ErrBadSetting}, nil, device.ClassNone},
		{"an unknown backend name is ErrBadSetting",
			func(t *testing.T) error { var g device.Registry; _, err := g.Open("bogus"); return err },
			[]error{device.ErrBadSetting}, nil, device.ClassNone},
		{"a preflight child that hangs is ErrInitHung and a *PreflightError",
			func(t *testing.T) error {
				rt, err := openSimWith(t, map[string]string{sim.EnvFail: string(sim.Hang)})
				require.NoError(t, err)
				require.NoError(t, rt.UsePreflight(device.Preflight{Command: []string{os.Args[0], "-test.run=^$"},
					Deadline: 100 * time.Millisecond, RetryFor: -1}))
				t.Setenv("GPUINIT_PREFLIGHT", "")
				return rt.Init(ctx)
			},
			[]error{driver.ErrInitHung}, []func(error) bool{matches[*device.PreflightError]()}, device.ClassNotYet},
		{"auto with no usable GPU is a *NoBackendError reaching each backend's *DriverError",
			func(t *testing.T) error {
				var g device.Registry
				registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDriver))
				registerGPU(&g, "hip", 20, sim.WithFailure(sim.NoDevice))
				return openIn(t, &g, "auto").Init(ctx)
			},
			[]error{device.ErrNoDevice},
			[]func(error) bool{matches[*device.NoBackendError](), matches[*device.DriverError](), matches[*lazy.InitError]()},
			device.ClassNoGPUHere},
		{"no device while a device node is there is not yet, with the host's evidence",
			func(t *testing.T) error {
				var g device.Registry
				g.Register(driver.Registration{Name: "cuda", GPU: true, AutoRank: 10,
					Open:    func() (driver.Backend, error) { return fakeGPU{sim.New(sim.WithDevices(0)), "cuda"}, nil },
					Present: func() (bool, string) { return true, "/dev/nvidia0" }})
				return openIn(t, &g, "cuda").Init(ctx)
			},
			[]error{device.ErrNoDevice}, []func(error) bool{matches[evidenced](), matches[*device.DriverError]()}, device.ClassNotYet},
		{"auto passing over a backend whose devices the host shows is ErrOtherVendor",
			func(t *testing.T) error {
				passed := autoBesideHip(t).Stats().PassedOver
				require.Len(t, passed, 1)
				return passed[0].Err
			},
			[]error{driver.ErrOtherVendor}, nil, device.ClassNone},
		{"a queued call that failed is a *lazy.DeferredError in FailedCalls",
			func(t *testing.T) error {
				rt, err := openSimWith(t, nil)
				require.NoError(t, err)
				t.Cleanup(func() { _ = rt.Shutdown(ctx) })
				require.NoError(t, rt.LazyCall(ctx, func(context.Context) error { return driver.ErrNotSupported }))
				require.NoError(t, rt.Init(ctx))
				failed := rt.Stats().FailedCalls
				require.Len(t, failed, 1)
				return failed[0]
			},
			// ClassOf counts a failure lazy memoized as an initialization's, whatever
			// it wraps: the table's last row.
			[]error{driver.ErrNotSupported}, []func(error) bool{matches[*lazy.DeferredError]()}, device.ClassNeedsOperator},
		{"a Runtime after Shutdown is ErrClosed",
			func(t *testing.T) error {
				rt, err := openSimWith(t, nil)
				require.NoError(t, err)
				require.NoError(t, rt.Shutdown(ctx))
				return rt.Init(ctx)
			},
			[]error{device.ErrClosed}, nil, device.ClassNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.produce(t)
			require.Error(t, err)
			for _, s := range tc.is {
				assert.ErrorIs(t, err, s)
			}
			for i, as := range tc.as {
				assert.True(t, as(err), "errors.As target %d: %v", i, err)
			}
			assert.Equal(t, tc.class, device.ClassOf(err), "%v", err)
			if want, ok := says[tc.name]; ok {
				checked++
				assert.EqualError(t, err, want)
			}
		})
	}
	assert.Equal(t, len(says), checked, "every message in says is a row's")
}
