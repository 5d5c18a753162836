//go:build linux && cgo && cudalink

package cudalink

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/cuda"
	"github.com/gpuinit/gpuinit/device/cuda/internal/linkapi"
)

// TestTheBackendCallsThroughMumax: with this package imported, the cuda
// backend's driver calls go through mumax's cu. The CI leg runs it against
// Debian's libcuda on a machine with no GPU, where cuInit answers 100: the
// answer mumax gives is the backend's.
func TestTheBackendCallsThroughMumax(t *testing.T) {
	var calls atomic.Int64
	through := *linkapi.Override
	wrapped := through
	wrapped.Init = func() int { calls.Add(1); return through.Init() }
	wrapped.DriverGetVersion = func() (int, int) { calls.Add(1); return through.DriverGetVersion() }
	linkapi.Override = &wrapped
	var g device.Registry
	g.Register(cuda.Registration())
	rt, err := g.Open("cuda")
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Init(context.Background())
	t.Logf("Init over the linked libcuda, through mumax: %v", err)
	if calls.Load() == 0 {
		t.Fatal("no driver call went through mumax's cu")
	}
	if err != nil && device.ClassOf(err) == device.ClassNone {
		t.Errorf("a failure without a class: %v", err)
	}
}
