package device_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
