package device_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPU is sim under a GPU backend's name.
type fakeGPU struct {
	*sim.Backend
	name string
}

func (f fakeGPU) Name() string { return f.name }

// registerGPU registers a counting fake GPU backend under name in g, tried by
// auto at rank, classified by CUDA's table.
func registerGPU(g *device.Registry, name string, rank int, opts ...sim.Option) *devicetest.Counting {
	c := &devicetest.Counting{Backend: fakeGPU{sim.New(opts...), name}}
	g.Register(driver.Registration{Name: name, GPU: true, AutoRank: rank,
		Open:     func() (driver.Backend, error) { return c, nil },
		Classify: func(op string, code int) *driver.DriverError { return drivercodes.CUDA.Error(op, code, "", "") }})
	return c
}

func openIn(t *testing.T, g *device.Registry, name string) *device.Runtime {
	t.Helper()
	r, err := g.Open(name)
	require.NoError(t, err)
	return r
}

func simRegistration(open func() (driver.Backend, error)) driver.Registration {
	return driver.Registration{Name: "sim", Open: open}
}

func newSim() (driver.Backend, error) { return sim.New(), nil }

func TestRegisterPanicsOnProgrammingErrors(t *testing.T) {
	var g device.Registry
	g.Register(driver.Registration{Name: "dup", Open: newSim})
	for _, tc := range []struct {
		name string
		reg  driver.Registration
		want string
	}{
		{"twice", driver.Registration{Name: "dup", Open: newSim}, "device: Register: backend dup registered twice"},
		{"neither Open nor a reason", driver.Registration{Name: "x"}, "device: Register: backend x needs an Open or an Unavailable reason, not both"},
		{"both Open and a reason", driver.Registration{Name: "x", Open: newSim, Unavailable: "no cgo"}, "device: Register: backend x needs an Open or an Unavailable reason, not both"},
		{"empty name", driver.Registration{Open: newSim}, `device: Register: "" is not a backend name`},
		{"auto", driver.Registration{Name: "auto", Open: newSim}, `device: Register: "auto" is not a backend name`},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.PanicsWithValue(t, tc.want, func() { g.Register(tc.reg) }) })
	}
	assert.Equal(t, []string{"dup"}, g.Backends(), "a refused Register leaves nothing behind")
}

func TestAnUnavailableRegistrationSaysWhyAndALaterOneWins(t *testing.T) {
	var g device.Registry
	g.Register(driver.Registration{Name: "cuda", GPU: true, Unavailable: "this binary was built without cgo"})
	_, err := g.Open("cuda")
	assert.ErrorIs(t, err, device.ErrNotCompiled)
	assert.ErrorContains(t, err, "built without cgo")
	assert.Empty(t, g.Backends(), "an unavailable backend cannot be opened")
	assert.Equal(t, []string{"auto", "cuda"}, g.Known(), "but it is a name Open knows")

	err = openIn(t, &g, "auto").Init(context.Background())
	assert.ErrorIs(t, err, device.ErrNotCompiled, "auto fails at Init, with the reason")
	assert.ErrorContains(t, err, "built without cgo")

	var h device.Registry
	h.Register(driver.Registration{Name: "cuda", Unavailable: "no cgo"})
	registerGPU(&h, "cuda", 10)
	assert.Equal(t, []string{"cuda"}, h.Backends(), "a registration with an Open replaces an unavailable one")
	h.Register(driver.Registration{Name: "cuda", Unavailable: "no cgo"})
	assert.Equal(t, []string{"cuda"}, h.Backends(), "and an unavailable one after it changes nothing")
}

func TestOpenOfAMissingBackendSaysWhy(t *testing.T) {
	var g device.Registry
	for _, tc := range []struct {
		name, env string
		want      []string
	}{
		{"nosuch", "", []string{`unknown backend "nosuch": the backends are auto`}},
		{"CUDA", "", []string{`unknown backend "CUDA": did you mean "cuda"?`}},
		{"", "Sim", []string{`unknown backend GPUINIT_BACKEND="Sim": did you mean "sim"?`}},
		{"", "rocm", []string{`unknown backend GPUINIT_BACKEND="rocm": did you mean "hip"?`}},
		{"AUTO", "", []string{`did you mean "auto"?`}},
		{"hip", "", []string{`backend "hip" is not registered (forgotten import?)`,
			`"github.com/gpuinit/gpuinit/device/backends"`, `"github.com/gpuinit/gpuinit/device/hip"`}},
		{"", "nosuch", []string{`unknown backend GPUINIT_BACKEND="nosuch"`}},
	} {
		t.Run(tc.name+tc.env, func(t *testing.T) {
			t.Setenv("GPUINIT_BACKEND", tc.env)
			_, err := g.Open(tc.name)
			if strings.Contains(tc.want[0], "unknown backend") || strings.Contains(tc.want[0], "did you mean") {
				assert.ErrorIs(t, err, device.ErrBadSetting, "an unknown name is a bad setting, not a build problem")
				assert.NotErrorIs(t, err, device.ErrNotCompiled)
			} else {
				assert.ErrorIs(t, err, device.ErrNotCompiled, "a shipped backend not imported")
			}
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.NotContains(t, err.Error(), "auto, auto", "each name once")
		})
	}
	_, err := g.Open("auto")
	assert.ErrorIs(t, err, device.ErrNotCompiled)
	assert.ErrorContains(t, err, "no GPU backend is registered in this binary; forgotten import?")
}

func TestFailedOpenCachesNothing(t *testing.T) {
	var g device.Registry
	var opens atomic.Int64
	g.Register(simRegistration(func() (driver.Backend, error) {
		if opens.Add(1) == 1 {
			return nil, errors.New("bad configuration")
		}
		return sim.New(), nil
	}))
	_, err := g.Open("sim")
	assert.ErrorContains(t, err, "opening backend sim: bad configuration")
	r := openIn(t, &g, "sim")
	assert.Same(t, r, openIn(t, &g, "sim"))
	assert.Equal(t, int64(2), opens.Load(), "Open runs until it succeeds, then never again")
}

func TestOpenCallsTheBackendsOpenWithoutALockAndOnlyOnce(t *testing.T) {
	var g device.Registry
	var opens atomic.Int64
	release := make(chan struct{})
	g.Register(driver.Registration{Name: "other", Open: newSim})
	g.Register(driver.Registration{Name: "slow", Open: func() (driver.Backend, error) {
		opens.Add(1)
		// An Open that opens another backend must not deadlock.
		if _, err := g.Open("other"); err != nil {
			return nil, err
		}
		<-release
		return sim.New(), nil
	}})
	var wg sync.WaitGroup
	runtimes := make([]*device.Runtime, 8)
	for k := range runtimes {
		wg.Go(func() {
			r, err := g.Open("slow")
			assert.NoError(t, err)
			runtimes[k] = r
		})
	}
	for opens.Load() == 0 {
		runtime.Gosched()
	}
	openIn(t, &g, "other") // the registry is not held while an Open runs
	close(release)
	wg.Wait()
	assert.Equal(t, int64(1), opens.Load(), "concurrent Opens share one call")
	for _, r := range runtimes {
		assert.Same(t, runtimes[0], r)
	}
}

func TestAnOpenThatCallsGoexitReleasesEveryWaiter(t *testing.T) {
	var g device.Registry
	var opens atomic.Int64
	g.Register(simRegistration(func() (driver.Backend, error) {
		if opens.Add(1) == 1 {
			runtime.Goexit()
		}
		return sim.New(), nil
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = g.Open("sim") // this goroutine exits inside Open
	}()
	<-done
	assert.NotNil(t, openIn(t, &g, "sim"), "the registry is not left waiting for the first Open")
}

func TestOpenReadsTheEnvironment(t *testing.T) {
	var g device.Registry
	g.Register(simRegistration(newSim))
	t.Setenv("GPUINIT_BACKEND", " sim ")
	assert.Equal(t, "sim", openIn(t, &g, "").Name())
}

func TestDefaultRegistryKnowsTheImportedBackends(t *testing.T) {
	assert.Equal(t, "auto", device.DefaultRegistry.Known()[0])
	assert.Contains(t, device.DefaultRegistry.Known(), "sim")
	assert.Contains(t, device.DefaultRegistry.Backends(), "sim")
}

func TestAutoTriesGPUBackendsByRank(t *testing.T) {
	var g device.Registry
	registerGPU(&g, "zeta", 20)
	registerGPU(&g, "alpha", 30)
	registerGPU(&g, "beta", 20)
	g.Register(simRegistration(newSim))
	assert.Equal(t, []string{"beta", "zeta", "alpha"}, g.AutoOrder(), "by rank, then by name; sim is no GPU")
}

func TestAutoChoosesTheFirstBackendWithADevice(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		cuda, hip  []sim.Option
		floor      int // RequireDriverVersion("cuda", floor), if not 0
		chosen     string
		passedOver []string
		want       error // the summary of a failed Init
	}{
		{name: "the first that works", chosen: "cuda"},
		{name: "past one without a device", cuda: []sim.Option{sim.WithFailure(sim.NoDevice)}, hip: []sim.Option{sim.WithDevices(1)},
			chosen: "hip", passedOver: []string{"cuda"}},
		{name: "past a driver below the floor", floor: sim.DriverVersion + 1, hip: []sim.Option{sim.WithDevices(1)},
			chosen: "hip", passedOver: []string{"cuda"}},
		{name: "no driver at all", cuda: []sim.Option{sim.WithFailure(sim.NoDriver)}, hip: []sim.Option{sim.WithFailure(sim.NoDriver)},
			passedOver: []string{"cuda", "hip"}, want: device.ErrDriverNotFound},
		{name: "a driver but no device", cuda: []sim.Option{sim.WithFailure(sim.NoDriver)}, hip: []sim.Option{sim.WithFailure(sim.NoDevice)},
			passedOver: []string{"cuda", "hip"}, want: device.ErrNoDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g device.Registry
			cuda, hip := registerGPU(&g, "cuda", 10, tc.cuda...), registerGPU(&g, "hip", 20, tc.hip...)
			r := openIn(t, &g, "auto")
			assert.Equal(t, "auto", r.Name(), "before Init")
			assert.Nil(t, r.Backend(), "no backend before the choice")
			_, err := r.DriverVersion()
			assert.ErrorIs(t, err, driver.ErrNotInitialized, "no one driver to ask before the choice")
			if tc.floor != 0 {
				require.NoError(t, r.RequireDriverVersion("cuda", tc.floor))
			}
			err = r.Init(ctx)
			var passed []string
			for _, f := range r.Stats().PassedOver {
				passed = append(passed, f.Backend)
			}
			assert.Equal(t, tc.passedOver, passed)
			if tc.want != nil {
				var nb *device.NoBackendError
				require.ErrorAs(t, err, &nb)
				assert.Len(t, nb.Tried, 2)
				for _, s := range []error{device.ErrNoDevice, device.ErrDriverNotFound} {
					assert.Equal(t, s == tc.want, errors.Is(err, s), "one summary sentinel: %v", s)
				}
				var de *device.DriverError
				assert.True(t, errors.As(err, &de), "each backend's DriverError is reachable")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.chosen, r.Name())
			assert.Equal(t, tc.chosen, r.Backend().Name())
			assert.Equal(t, tc.chosen, r.Registration().Name)
			assert.Same(t, r, openIn(t, &g, tc.chosen), "Open of the choice returns auto's Runtime")
			assert.Equal(t, int64(1), cuda.Calls().Init, "cuda tried once")
			wantHip := int64(0)
			if tc.chosen == "hip" {
				wantHip = 1
			}
			assert.Equal(t, wantHip, hip.Calls().Init)
		})
	}
}

func TestAutoSharesOneQueueWhateverNameOpenedIt(t *testing.T) {
	ctx := context.Background()
	var g device.Registry
	registerGPU(&g, "cuda", 10)
	var mu sync.Mutex
	var order []string
	queue := func(r *device.Runtime, what string) {
		require.NoError(t, r.LazyCall(ctx, func(context.Context) error { mu.Lock(); order = append(order, what); mu.Unlock(); return nil }))
	}
	t.Setenv("GPUINIT_BACKEND", "")
	a, b := openIn(t, &g, ""), openIn(t, &g, "auto")
	require.Same(t, a, b)
	queue(a, `via ""`)
	queue(b, "via auto")
	require.NoError(t, a.Init(ctx))
	queue(openIn(t, &g, "cuda"), "via cuda, after the choice")
	assert.Equal(t, []string{`via ""`, "via auto", "via cuda, after the choice"}, order)
}

// TestANameOpenedBeforeTheChoiceKeepsItsOwnRuntime pins runtimeTable's one
// window: Open by name before auto has chosen must neither wait for the
// choice nor stop auto from trying the next backend.
func TestANameOpenedBeforeTheChoiceKeepsItsOwnRuntime(t *testing.T) {
	ctx := context.Background()
	t.Run("auto is not pinned by it", func(t *testing.T) {
		var g device.Registry
		registerGPU(&g, "cuda", 10, sim.WithFailure(sim.NoDevice))
		registerGPU(&g, "hip", 20)
		cuda := openIn(t, &g, "cuda")
		auto := openIn(t, &g, "auto")
		assert.NotSame(t, cuda, auto)
		require.NoError(t, auto.Init(ctx))
		assert.Equal(t, "hip", auto.Name(), "auto still tried hip after cuda")
		assert.ErrorIs(t, cuda.Init(ctx), device.ErrNoDevice)
		assert.Nil(t, cuda.Stats().PassedOver, "a named backend passes nothing over")
	})
	t.Run("and stays its own when auto chooses it", func(t *testing.T) {
		var g device.Registry
		counting := registerGPU(&g, "cuda", 10)
		cuda := openIn(t, &g, "cuda")
		auto := openIn(t, &g, "auto")
		require.NoError(t, auto.Init(ctx))
		assert.Equal(t, "cuda", auto.Name())
		assert.Same(t, cuda, openIn(t, &g, "cuda"), "the first Runtime of a name is kept")
		require.NoError(t, cuda.Init(ctx))
		assert.Equal(t, int64(2), counting.Calls().Init, "one Init per Runtime: the backend memoizes the driver's")
	})
	t.Run("while auto is choosing", func(t *testing.T) {
		var g device.Registry
		release, entered := make(chan struct{}), make(chan struct{})
		g.Register(driver.Registration{Name: "cuda", GPU: true, Open: func() (driver.Backend, error) {
			return blockingInit{fakeGPU{sim.New(), "cuda"}, entered, release}, nil
		}})
		auto := openIn(t, &g, "auto")
		started := make(chan error)
		go func() { started <- auto.Init(ctx) }()
		<-entered
		cuda := openIn(t, &g, "cuda") // must not wait for the choice
		close(release)
		require.NoError(t, <-started)
		assert.NotSame(t, auto, cuda)
		assert.Same(t, cuda, openIn(t, &g, "cuda"))
	})
}

// blockingInit's Init says it has begun, then waits for release.
type blockingInit struct {
	driver.Backend
	entered, release chan struct{}
}

func (b blockingInit) Init(ctx context.Context) error {
	close(b.entered)
	<-b.release
	return b.Backend.Init(ctx)
}

// TestAStickyCodeReportedBeforeInitIsRefusedWithItsClassification is the
// rule for reports before the devices are known: the code is classified by
// the backend's registration (no driver is loaded yet), and the report is
// refused with an error that says why, so that nothing is recorded for a
// device the Runtime may never have.
func TestAStickyCodeReportedBeforeInitIsRefusedWithItsClassification(t *testing.T) {
	ctx := context.Background()
	var g device.Registry
	cuda := registerGPU(&g, "cuda", 10)
	r := openIn(t, &g, "cuda")
	de, err := r.ReportDriverCode(0, "cuLaunchKernel", 700)
	require.NotNil(t, de)
	assert.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", de.Name, "classified before Init")
	assert.True(t, de.Sticky)
	assert.ErrorIs(t, err, driver.ErrNotInitialized)
	assert.ErrorIs(t, err, device.ErrInvalidDevice)
	assert.ErrorContains(t, err, "report not recorded")
	assert.Zero(t, cuda.Calls().Init, "nothing initialized the backend")

	require.NoError(t, r.Init(ctx))
	assert.False(t, (len(r.Stats().Lost) > 0), "the refused report left nothing to apply at Init")
	_, err = r.ReportDriverCode(0, "cuLaunchKernel", 700)
	assert.ErrorIs(t, err, device.ErrDeviceLost, "after Init the same report loses the device")
	assert.Equal(t, 1, len(r.Stats().Lost))

	var h device.Registry
	registerGPU(&h, "cuda", 10)
	registerGPU(&h, "hip", 20)
	auto := openIn(t, &h, "auto")
	de, err = auto.ReportDriverCode(0, "cuLaunchKernel", 700)
	assert.Equal(t, "unclassified", de.Name, "before its choice auto cannot tell whose code it is")
	assert.ErrorIs(t, err, driver.ErrNotInitialized)
	require.NoError(t, auto.Init(ctx))
	de, err = auto.ReportDriverCode(0, "cuLaunchKernel", 700)
	assert.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", de.Name, "once auto chose cuda, cuda's table classifies")
	assert.ErrorIs(t, err, device.ErrDeviceLost, "and the device is lost")
}

func TestRequireDriverVersionRefusesFloorsThatNeverApply(t *testing.T) {
	var g device.Registry
	registerGPU(&g, "cuda", 10)
	registerGPU(&g, "hip", 20)
	g.Register(simRegistration(newSim))
	auto, simRT := openIn(t, &g, "auto"), openIn(t, &g, "sim")
	for _, tc := range []struct {
		name    string
		rt      *device.Runtime
		backend string
		version int
		want    string
	}{
		{"a name in upper case", auto, "SIM", 1, `the auto runtime initializes only "cuda" or "hip"`},
		{"auto itself", auto, "auto", 1, "so that floor would never apply"},
		{"no name", auto, "", 1, "so that floor would never apply"},
		{"another backend", simRT, "cuda", 12040, `the sim runtime initializes only "sim"`},
		{"a negative version", auto, "cuda", -1, "want a positive version"},
		{"version zero", auto, "hip", 0, "want a positive version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, tc.rt.RequireDriverVersion(tc.backend, tc.version), tc.want)
		})
	}
	require.NoError(t, auto.RequireDriverVersion("cuda", sim.DriverVersion))
	require.NoError(t, auto.Init(context.Background()))
	assert.ErrorContains(t, auto.RequireDriverVersion("cuda", sim.DriverVersion), "call it before the first Init")
}

func TestSuggestNamesTheBackendMeant(t *testing.T) {
	var g device.Registry
	for name, want := range map[string]string{
		"CUDA": "cuda", " Sim ": "sim", "rocm": "hip", "AMD": "hip", "nvidia": "cuda", "AUTO": "auto",
		"cuda": "cuda", "metal": "", "": "",
	} {
		assert.Equal(t, want, g.Suggest(name), "Suggest(%q)", name)
	}
}
