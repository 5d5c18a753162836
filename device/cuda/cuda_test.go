//go:build cuda && cgo

package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/internal/devicetest"
	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/gpuinit/gpuinit/rng/philox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const envLazyProof = "GPUINIT_CUDA_TEST_LAZY_PROOF"

func TestMain(m *testing.M) {
	if os.Getenv(envLazyProof) != "" {
		// Child: Open and LazyCall, then ask the driver whether anyone called
		// cuInit: before it, cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED.
		r, err := device.Open("cuda")
		if err == nil {
			err = r.LazyCall(context.Background(), func(context.Context) error { return nil })
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		_, err = (&Backend{}).Count()
		var de *device.DriverError
		if errors.As(err, &de) {
			fmt.Println("code", de.Code, de.Name)
		} else {
			fmt.Println("unexpected:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOpenAndLazyCallDoNotCallCuInit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envLazyProof+"=1")
	r, err := hangcheck.Run(context.Background(), cmd, 60*time.Second)
	require.NoError(t, err)
	require.Equal(t, hangcheck.OK, r.Verdict, r.Stderr)
	assert.Equal(t, "code 3 CUDA_ERROR_NOT_INITIALIZED", strings.TrimSpace(r.Stdout))
}

func TestDriverVersionBeforeInit(t *testing.T) {
	v, err := (&Backend{}).DriverVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, 11000, "CUDA 11 or later")
	rv, err := (&Backend{}).RuntimeVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rv, 11000)
	t.Logf("cuDriverGetVersion: %d, built against CUDA_VERSION %d", v, rv)
}

func TestNoDeviceIsReportedAndMemoized(t *testing.T) {
	devicetest.CheckNoDeviceMemoized(t, &Backend{}, func(t *testing.T, de *device.DriverError) {
		assert.Equal(t, 100, de.Code)
		assert.Equal(t, "CUDA_ERROR_NO_DEVICE", de.Name)
		assert.Equal(t, "no CUDA-capable device is detected", de.Message, "the driver's own description")
		assert.Contains(t, de.Error(), "CUDA_VISIBLE_DEVICES")
	})
}

func TestGeneratorWithoutDeviceFailsWithMappedError(t *testing.T) {
	_, err := (&Backend{}).NewGenerator(0)
	if err == nil {
		t.Skip("this machine has a CUDA device")
	}
	var de *device.DriverError
	require.ErrorAs(t, err, &de, "a mapped error, not a panic")
	assert.Equal(t, "cuda", de.Backend)
}

func TestDeviceQueries(t *testing.T) {
	devicetest.SkipWithoutDevice(t, &Backend{})
	r := device.New(&Backend{})
	devices, err := r.Devices(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, devices)
	for _, d := range devices {
		assert.Regexp(t, `^sm_\d+$`, d.Arch)
		assert.NotZero(t, d.TotalMemory)
		t.Logf("device %d: %s %s %d bytes", d.Ordinal, d.Name, d.Arch, d.TotalMemory)
	}
}

func TestDeviceGeneratorMatchesPhilox(t *testing.T) {
	devicetest.SkipWithoutDevice(t, &Backend{})
	g, err := (&Backend{}).NewGenerator(0)
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.SetSeed(42))
	require.NoError(t, g.SetOffset(6))
	got := make([]uint32, 4*65536+5)
	require.NoError(t, g.Generate(got))
	want := make([]uint32, len(got))
	philox.FillCURAND(want, 42, 6)
	assert.Equal(t, want, got)
}
