package health_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowMemory's reads take 10 ms: long enough that concurrent statuses share
// one read, short of the status's wait.
type slowMemory struct{ *sim.Backend }

func (b slowMemory) ReadMemory(ordinal int) (driver.Memory, error) {
	time.Sleep(10 * time.Millisecond)
	return b.Backend.ReadMemory(ordinal)
}

func (b slowMemory) Unwrap() driver.Backend { return b.Backend }

// TestConcurrentStatusesEachGetTheSharedMemoryRead: statuses asked for while
// one read of a device's memory is under way share it, and every one of them
// gets its result. A synctest bubble keeps the read inside the status's wait
// however loaded the machine.
func TestConcurrentStatusesEachGetTheSharedMemoryRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := device.New(slowMemory{sim.New()})
		defer rt.Shutdown(context.Background())
		require.NoError(t, rt.Init(context.Background()))
		h := health.New(rt, quiet)
		defer h.Close()
		var wg sync.WaitGroup
		statuses := make([]health.Status, 4)
		for i := range statuses {
			wg.Go(func() { statuses[i] = h.Snapshot() })
		}
		wg.Wait()
		for i, s := range statuses {
			require.Len(t, s.Devices, 2)
			for _, d := range s.Devices {
				assert.NotNil(t, d.FreeMemory, "status %d, device %d", i, d.Ordinal)
			}
		}
	})
}

// TestTheStatusReadsFreeMemory: the status carries each device's free memory,
// read when it is asked for (it was always null before), and none for a lost
// device.
func TestTheStatusReadsFreeMemory(t *testing.T) {
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	st := status(t, h)
	require.Len(t, st.Devices, 2)
	for _, d := range st.Devices {
		require.NotNil(t, d.FreeMemory, "device %d", d.Ordinal)
		assert.Equal(t, d.TotalMemory-sim.UsedMemory, *d.FreeMemory)
		assert.Equal(t, "sim", d.MemorySource)
	}
	s.InjectXid(1, 79)
	require.Eventually(t, func() bool { return (len(rt.Stats().Lost) > 0) }, 10*time.Second, time.Millisecond)
	st = status(t, h)
	assert.NotNil(t, st.Devices[0].FreeMemory)
	assert.Nil(t, st.Devices[1].FreeMemory, "a lost device's memory is not read")
}
