package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/devicetest"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/stretchr/testify/require"
)

// The GPU runtime is one per process, and backends cannot be unregistered, so
// each scenario about it runs in a fresh child process (this test binary,
// re-executed) that registers the fake "cuda" and "hip" backends it needs.
const envChild = "GPUINIT_DEVICE_TEST_CHILD"

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		if err := childScenarios()[name](); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(t *testing.T, name string) {
	t.Helper()
	require.Contains(t, childScenarios(), name)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+name)
	r, err := hangcheck.Run(context.Background(), cmd, 60*time.Second)
	require.NoError(t, err)
	require.Equal(t, hangcheck.OK, r.Verdict, "scenario %s:\n%s%s", name, r.Stdout, r.Stderr)
}

// fakeGPU is sim under a GPU backend's name.
type fakeGPU struct {
	*sim.Backend
	name string
}

func (f fakeGPU) Name() string { return f.name }

// registerGPU registers a counting fake GPU backend under name.
func registerGPU(name string, opts ...sim.Option) *devicetest.Counting {
	c := &devicetest.Counting{Backend: fakeGPU{sim.New(opts...), name}}
	device.Register(name, func() (device.Backend, error) { return c, nil })
	return c
}

func open(name string) *device.Runtime {
	r, err := device.Open(name)
	if err != nil {
		panic(err)
	}
	return r
}

func check(ok bool, format string, args ...any) error {
	if !ok {
		return fmt.Errorf(format, args...)
	}
	return nil
}

func childScenarios() map[string]func() error {
	ctx := context.Background()
	return map[string]func() error{
		"unregistered-shipped-backend": func() error {
			_, err := device.Open("hip")
			return check(errors.Is(err, device.ErrNotCompiled) &&
				strings.Contains(fmt.Sprint(err), `backend "hip" is not registered (forgotten import?)`) &&
				strings.Contains(fmt.Sprint(err), `"github.com/gpuinit/gpuinit/device/backends"`) &&
				strings.Contains(fmt.Sprint(err), `"github.com/gpuinit/gpuinit/device/hip"`), "Open(hip): %v", err)
		},
		"unavailable-backend": func() error {
			device.RegisterUnavailable("cuda", "this binary was built without cgo")
			_, err := device.Open("cuda")
			if err := check(errors.Is(err, device.ErrNotCompiled) && strings.Contains(fmt.Sprint(err), "built without cgo"), "Open(cuda): %v", err); err != nil {
				return err
			}
			r, err := device.Open("auto")
			if err != nil {
				return fmt.Errorf("Open(auto) fails only at Init: %w", err)
			}
			err = r.Init(ctx)
			return check(errors.Is(err, device.ErrNotCompiled) && strings.Contains(fmt.Sprint(err), "built without cgo"), "Init: %v", err)
		},
		"auto-shares-with-named": func() error {
			cuda, hip := registerGPU("cuda"), registerGPU("hip")
			var mu sync.Mutex
			var order []string
			queue := func(r *device.Runtime, what string) {
				_ = r.LazyCall(ctx, func(context.Context) error { mu.Lock(); order = append(order, what); mu.Unlock(); return nil })
			}
			a, b := open(""), open("auto")
			queue(a, "via \"\"")
			queue(b, "via auto")
			c := open("cuda")
			queue(c, "via cuda")
			if a != b || b != c {
				return errors.New(`Open(""), Open("auto") and Open("cuda") gave different runtimes`)
			}
			if err := c.Init(ctx); err != nil {
				return err
			}
			return errors.Join(
				check(slices.Equal(order, []string{"via \"\"", "via auto", "via cuda"}), "one queue, in call order: %q", order),
				check(cuda.Calls().Init == 1 && hip.Calls().Init == 0, "inits: cuda %d, hip %d", cuda.Calls().Init, hip.Calls().Init),
				check(a.Name() == "cuda", "Name after Init: %q", a.Name()),
				check(open("hip") != a, "hip gets a runtime of its own"),
			)
		},
		"auto-falls-back-to-hip": func() error {
			cuda, _ := registerGPU("cuda", sim.WithFailure(sim.NoDevice)), registerGPU("hip", sim.WithDevices(1))
			r := open("auto")
			if name := r.Name(); name != "auto" {
				return fmt.Errorf("Name before Init: %q, want auto", name)
			}
			n, err := r.DeviceCount(ctx)
			if err != nil {
				return err
			}
			return errors.Join(
				check(n == 1 && r.Name() == "hip", "chose %s with %d devices", r.Name(), n),
				check(cuda.Calls().Init == 1, "cuda tried once: %d", cuda.Calls().Init),
				check(open("hip") == r, "Open(hip) after the choice returns the GPU runtime"),
				check(open("cuda") != r, "Open(cuda) after hip was chosen gets its own"),
			)
		},
		"auto-reports-every-backend": func() error {
			registerGPU("cuda", sim.WithFailure(sim.NoDriver))
			registerGPU("hip", sim.WithFailure(sim.NoDevice))
			err := open("auto").Init(ctx)
			var nb *device.NoBackendError
			var de *device.DriverError
			return errors.Join(
				check(errors.As(err, &nb) && len(nb.Tried) == 2 && nb.Tried[0].Backend == "cuda", "a NoBackendError listing both: %v", err),
				check(errors.Is(err, device.ErrNoDevice), "a driver loaded, so ErrNoDevice: %v", err),
				check(!errors.Is(err, device.ErrDriverNotFound), "one summary, not cuda's own ErrDriverNotFound too"),
				check(errors.As(err, &de), "each backend's DriverError is reachable"),
				check(strings.Contains(fmt.Sprint(err), "dlopen") && strings.Contains(fmt.Sprint(err), "CUDA_ERROR_NO_DEVICE"), "message: %v", err),
			)
		},
		"auto-without-any-driver": func() error {
			registerGPU("cuda", sim.WithFailure(sim.NoDriver))
			registerGPU("hip", sim.WithFailure(sim.NoDriver))
			err := open("").Init(ctx)
			return check(errors.Is(err, device.ErrDriverNotFound) && !errors.Is(err, device.ErrNoDevice), "no driver at all: %v", err)
		},
		"auto-passes-over-a-driver-below-the-floor": func() error {
			cuda, hip := registerGPU("cuda"), registerGPU("hip", sim.WithDevices(1))
			r := open("auto")
			if err := r.RequireDriverVersion("cuda", sim.DriverVersion+1); err != nil {
				return err
			}
			if err := r.Init(ctx); err != nil {
				return fmt.Errorf("Init: %w", err)
			}
			passed := r.PassedOver()
			return errors.Join(
				check(r.Name() == "hip" && hip.Calls().Init == 1 && cuda.Calls().Init == 1, "chose %s (inits: cuda %d, hip %d)", r.Name(), cuda.Calls().Init, hip.Calls().Init),
				check(len(passed) == 1 && passed[0].Backend == "cuda" && errors.Is(passed[0].Err, device.ErrDriverMismatch), "passed over: %v", passed),
			)
		},
		"named-first-pins": func() error {
			registerGPU("cuda")
			hip := registerGPU("hip")
			h := open("hip")
			return errors.Join(
				check(open("auto") == h, "auto after Open(hip) is hip's runtime"),
				check(open("cuda") != h, "cuda is not hip"),
				check(h.Init(ctx) == nil && hip.Calls().Init == 1 && h.Name() == "hip", "hip initialized once"),
			)
		},
	}
}

func TestOneGPURuntimePerProcess(t *testing.T) {
	for _, name := range []string{"auto-shares-with-named", "auto-falls-back-to-hip", "auto-reports-every-backend", "auto-without-any-driver",
		"auto-passes-over-a-driver-below-the-floor", "named-first-pins"} {
		t.Run(name, func(t *testing.T) { runChild(t, name) })
	}
}
