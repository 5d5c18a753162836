package health_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/gpuinit/gpuinit/lazy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusIsOneMoment takes statuses while initializations finish, and
// checks that each agrees with its own state. (Before the status was read as
// of one state, 104 of 447,634 said "initializing" with a failure, a finish
// time or devices.)
func TestStatusIsOneMoment(t *testing.T) {
	var checked, initializing atomic.Int64
	for i := range 60 {
		var b *sim.Backend
		if i%2 == 0 {
			b = sim.New(sim.WithInitDelay(time.Duration(i%7) * 100 * time.Microsecond))
		} else {
			b = sim.New(sim.WithInitDelay(time.Duration(i%5)*100*time.Microsecond), sim.WithFailure(sim.NoDevice))
		}
		rt := device.New(b)
		h := health.New(rt, quiet)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					s := h.Snapshot()
					checked.Add(1)
					switch s.State {
					case lazy.Uninitialized.String(), lazy.Initializing.String():
						initializing.Add(1)
						assert.Nil(t, s.Failure, "%s with a failure", s.State)
						assert.Nil(t, s.Init.Finished, "%s with a finish time", s.State)
						assert.Empty(t, s.Devices, "%s with devices", s.State)
						assert.Empty(t, s.Class)
					case lazy.Ready.String():
						assert.Nil(t, s.Failure)
						assert.NotNil(t, s.Init.Finished)
						assert.Len(t, s.Devices, 2)
						return
					case lazy.Failed.String():
						assert.NotNil(t, s.Failure)
						assert.NotNil(t, s.Init.Finished)
						assert.Empty(t, s.Devices)
						return
					}
					// Let the initialization run: two readers on two
					// cores would keep it waiting for the scheduler's
					// 10 ms preemption, each time.
					runtime.Gosched()
				}
			})
		}
		wg.Wait()
		h.Close()
		rt.Shutdown(context.Background())
	}
	t.Logf("%d statuses, %d of them before the end", checked.Load(), initializing.Load())
}

// lossDuringRead loses device 1 while the status reads device 0's memory:
// between readiness and the list of losses, where a status that read each
// once would say ready beside a loss.
type lossDuringRead struct {
	*sim.Backend
	rt   *device.Runtime
	once sync.Once
}

// TestStatusReadinessAgreesWithItsLosses: a device lost while a status is
// read never gives a status that says ready beside a loss it lists.
func TestStatusReadinessAgreesWithItsLosses(t *testing.T) {
	b := &lossDuringRead{Backend: sim.New()}
	rt := device.New(b)
	b.rt = rt
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(context.Background()))
	h := health.New(rt, quiet)
	defer h.Close()
	s := h.Snapshot()
	require.Len(t, s.Lost, 1, "device 1 was lost while the status read device 0")
	assert.False(t, s.Ready, "not ready beside the loss it lists: %+v", s)
	assert.Contains(t, s.Reason, "device 1")
}

// TestTheStatusListsQueuedCallsThatFailed: a queued call's failure leaves
// the runtime ready, and the status names it with the call site.
func TestTheStatusListsQueuedCallsThatFailed(t *testing.T) {
	rt := device.New(sim.New())
	defer rt.Shutdown(context.Background())
	bad := errors.New("a bad queued call")
	require.NoError(t, rt.LazyCall(context.Background(), func(context.Context) error { return bad }))
	require.NoError(t, rt.Init(context.Background()))
	h := health.New(rt, quiet)
	defer h.Close()
	s := h.Snapshot()
	assert.True(t, s.Ready)
	require.Len(t, s.FailedCalls, 1)
	assert.Contains(t, s.FailedCalls[0].Message, "a bad queued call")
	assert.Contains(t, s.FailedCalls[0].Site, "status_test.go:")
}

func (b *lossDuringRead) ReadMemory(ordinal int) (driver.Memory, error) {
	if ordinal == 0 {
		b.once.Do(func() { _, _ = b.rt.ReportDriverCode(1, "cuLaunchKernel", 700) })
	}
	return b.Backend.ReadMemory(ordinal)
}

func (b *lossDuringRead) Unwrap() driver.Backend { return b.Backend }

// TestAStatusFirstServedAfterShutdownListsTheDevices: the Runtime refuses
// every call after Shutdown, but the status still lists the devices it
// knew, though no status was served before.
func TestAStatusFirstServedAfterShutdownListsTheDevices(t *testing.T) {
	rt := device.New(sim.New())
	h := health.New(rt, quiet)
	ctx := context.Background()
	require.NoError(t, rt.Init(ctx))
	require.NoError(t, rt.Shutdown(ctx))
	s := h.Snapshot()
	assert.True(t, s.Closed)
	require.Len(t, s.Devices, 2)
	assert.Equal(t, 1, s.Devices[1].Ordinal)
	assert.NotEmpty(t, s.Devices[1].Name)
}

// TestASnapshotIsTheCallersToKeep: a caller that changes the maps of one
// Snapshot changes neither the Runtime nor the next Snapshot, though the
// probes read the Runtime's own state.
func TestASnapshotIsTheCallersToKeep(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1")
	s, rt := watchedSim(t)
	h := health.New(rt, quiet)
	defer h.Close()
	s.InjectXid(0, 13)
	require.Eventually(t, func() bool { return rt.Stats().Health[0].Counted["xid 13"] == 1 }, 10*time.Second, time.Millisecond)
	mine := h.Snapshot()
	require.NotNil(t, mine.Devices[0].Health)
	require.NotEmpty(t, mine.Visibility)
	mine.Devices[0].Health.Counted["xid 13"] = 99
	mine.Visibility["CUDA_VISIBLE_DEVICES"] = "scribbled"
	ok, _ := h.Readiness()
	require.True(t, ok)
	next := h.Snapshot()
	assert.Equal(t, int64(1), next.Devices[0].Health.Counted["xid 13"])
	assert.Equal(t, "0,1", next.Visibility["CUDA_VISIBLE_DEVICES"])
	assert.Equal(t, int64(1), rt.Stats().Health[0].Counted["xid 13"])
}
