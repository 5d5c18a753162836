package device_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACallPastItsDeadlineLosesItsDeviceAsHung: a Do whose function never
// returns (a kernel that never completes) marks its device hung within the
// monitor's interval of the deadline; later calls on it are refused at once,
// and the other device serves.
func TestACallPastItsDeadlineLosesItsDeviceAsHung(t *testing.T) {
	// A synctest bubble: the monitor's scans and the deadline run on one
	// fake clock, so the bound below holds however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		const deadline = 100 * time.Millisecond
		rt.SetCallDeadline(deadline)
		require.NoError(t, rt.Init(ctx))
		release := make(chan struct{})
		started := make(chan time.Time, 1)
		hung := make(chan struct{})
		go func() {
			defer close(hung)
			_ = rt.Do(ctx, 0, func() error { started <- time.Now(); <-release; return nil })
		}()
		begun := <-started
		for !(len(rt.Stats().Lost) > 0) {
			time.Sleep(time.Millisecond)
		}
		late := time.Since(begun) - deadline
		assert.Less(t, late, 100*time.Millisecond, "seen within 100 ms of the deadline: %s", late)
		lost := rt.Stats().Lost
		require.Len(t, lost, 1)
		assert.Equal(t, 0, lost[0].Ordinal)
		assert.Equal(t, device.LossDeadline, lost[0].Source)
		assert.ErrorIs(t, lost[0], driver.ErrDeviceHung)
		assert.ErrorIs(t, lost[0], device.ErrDeviceLost)
		assert.Equal(t, "Do", lost[0].Err.Op)
		assert.Contains(t, lost[0].Error(), "past the call deadline of 100ms")

		err := rt.Do(ctx, 0, func() error { t.Error("ran on a lost device"); return nil })
		assert.ErrorIs(t, err, driver.ErrDeviceHung, "refused at once")
		assert.NoError(t, rt.Do(ctx, 1, func() error { return nil }), "the other device serves")
		_, err = rt.Memory(ctx, 1)
		assert.NoError(t, err)
		close(release)
		<-hung
	})
}

// TestCallsWithinTheirDeadlineLoseNothing runs in a synctest bubble: the
// slow calls and the monitor's scans are on one fake clock, so a loaded
// machine cannot stretch a call past its deadline. The monitor times a call
// from the first scan that sees it, up to an interval after the call began,
// so only a call close to its deadline shows a monitor that reports early: at
// half the deadline, the 0.9 and 0.99 rows are lost.
func TestCallsWithinTheirDeadlineLoseNothing(t *testing.T) {
	const deadline = 200 * time.Millisecond
	for _, fraction := range []float64{0.6, 0.9, 0.99} {
		t.Run(fmt.Sprintf("a call of %.2f of the deadline", fraction), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				rt := device.New(sim.New())
				defer rt.Shutdown(context.Background())
				rt.SetCallDeadline(deadline)
				require.NoError(t, rt.Init(ctx))
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for range 200 {
							assert.NoError(t, rt.Do(ctx, g%2, func() error { return nil }))
						}
					})
				}
				took := time.Duration(fraction * float64(deadline))
				wg.Go(func() {
					// One slow call within the deadline, seen by several scans.
					assert.NoError(t, rt.Do(ctx, 0, func() error { time.Sleep(took); return nil }))
				})
				wg.Wait()
				assert.Empty(t, rt.Stats().Lost, "a call of %s within a deadline of %s", took, deadline)
			})
		})
	}
}

// TestADeadlineSetAfterInitHoldsCalls: with the watch off at Init, a
// deadline set later holds calls to it, one already in flight included.
func TestADeadlineSetAfterInitHoldsCalls(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		t.Run(map[bool]string{false: "a call that starts later", true: "a call in flight"}[inFlight], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				rt := device.New(sim.New())
				defer rt.Shutdown(context.Background())
				rt.SetCallDeadline(0)
				require.NoError(t, rt.Init(ctx))
				release, hung := make(chan struct{}), make(chan struct{})
				hang := func() {
					go func() {
						defer close(hung)
						_ = rt.Do(ctx, 0, func() error { <-release; return nil })
					}()
					synctest.Wait()
				}
				if inFlight {
					hang()
				}
				rt.SetCallDeadline(100 * time.Millisecond)
				if !inFlight {
					hang()
				}
				time.Sleep(time.Second)
				assert.True(t, (len(rt.Stats().Lost) > 0), "the hung call lost its device")
				close(release)
				<-hung
			})
		})
	}
}

func TestSetCallDeadlineZeroTurnsTheWatchOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(0)
		require.NoError(t, rt.Init(ctx))
		done, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			_ = rt.Do(ctx, 0, func() error { <-done; return nil })
		}()
		time.Sleep(10 * device.DefaultCallDeadline) // on the bubble's clock
		close(done)
		<-finished
		assert.False(t, (len(rt.Stats().Lost) > 0))
	})
}

func TestTurningTheWatchOffWhileACallRunsLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(time.Second)
		require.NoError(t, rt.Init(ctx))
		done, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			_ = rt.Do(ctx, 0, func() error { <-done; return nil })
		}()
		time.Sleep(100 * time.Millisecond)
		rt.SetCallDeadline(0)
		time.Sleep(10 * time.Second)
		close(done)
		<-finished
		assert.False(t, (len(rt.Stats().Lost) > 0))
	})
}

// TestCallsPastTheWatchedOnesAreCountedInHealth: with every slot of device
// 0 taken, one more call runs unwatched, and Health counts it.
func TestCallsPastTheWatchedOnesAreCountedInHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		require.NoError(t, rt.Init(ctx))
		release := make(chan struct{})
		var wg sync.WaitGroup
		const watched = 64 // the slots per device
		for range watched {
			wg.Go(func() { assert.NoError(t, rt.Do(ctx, 0, func() error { <-release; return nil })) })
		}
		synctest.Wait() // every call holds its slot
		assert.Zero(t, rt.Stats().Health[0].UnwatchedCalls)
		require.NoError(t, rt.Do(ctx, 0, func() error { return nil }))
		require.NoError(t, rt.Do(ctx, 1, func() error { return nil }))
		h := rt.Stats().Health
		assert.Equal(t, int64(1), h[0].UnwatchedCalls)
		assert.Zero(t, h[1].UnwatchedCalls)
		close(release)
		wg.Wait()
		assert.False(t, (len(rt.Stats().Lost) > 0))
	})
}

// TestAHungCallLeavesTheMonitorAsleep: once the one call in flight is
// reported hung, the monitor stops scanning, using no CPU for the rest of
// the process; a new call on another device wakes it, and is watched.
func TestAHungCallLeavesTheMonitorAsleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(sim.New())
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(100 * time.Millisecond)
		require.NoError(t, rt.Init(ctx))
		release := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(release)
		hang := func(ordinal int) {
			wg.Go(func() { _ = rt.Do(ctx, ordinal, func() error { <-release; return nil }) })
		}
		hang(0)
		for !(len(rt.Stats().Lost) > 0) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, device.CallMonitorScanning(rt), "the monitor scans on for a call it has reported hung")

		hang(1)
		synctest.Wait()
		assert.True(t, device.CallMonitorScanning(rt), "a new call wakes the monitor")
		for len(rt.Stats().Lost) < 2 {
			time.Sleep(time.Millisecond)
		}
		assert.ErrorIs(t, rt.CheckDevice(1), driver.ErrDeviceHung)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, device.CallMonitorScanning(rt))
	})
}

// panickingMemory is a sim whose memory reads panic, and counts them.
type panickingMemory struct {
	*sim.Backend
	mu    sync.Mutex
	reads int
}

// TestAPanickingMemoryReadDoesNotLaterLoseTheDeviceAsHung: the read's slot
// is released as the panic unwinds, so the monitor sees no call past its
// deadline.
func TestAPanickingMemoryReadDoesNotLaterLoseTheDeviceAsHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rt := device.New(&panickingMemory{Backend: sim.New()})
		defer rt.Shutdown(context.Background())
		rt.SetCallDeadline(100 * time.Millisecond)
		require.NoError(t, rt.Init(ctx))
		assert.PanicsWithValue(t, "the driver's memory read panicked", func() { _, _ = rt.Memory(ctx, 0) })
		time.Sleep(time.Second) // ten deadlines, on the bubble's clock
		assert.False(t, (len(rt.Stats().Lost) > 0), "lost: %v", rt.Stats().Lost)
		assert.NoError(t, rt.CheckDevice(0))
	})
}

// TestMemoryOfALostDeviceIsRefusedWithoutADriverCall: as Do and the
// generators are.
func TestMemoryOfALostDeviceIsRefusedWithoutADriverCall(t *testing.T) {
	ctx := context.Background()
	b := &panickingMemory{Backend: sim.New()}
	rt := device.New(b)
	defer rt.Shutdown(context.Background())
	require.NoError(t, rt.Init(ctx))
	sticky := &device.DriverError{Backend: "sim", Op: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Sticky: true}
	require.ErrorIs(t, rt.ReportError(1, sticky), device.ErrDeviceLost)
	_, err := rt.Memory(ctx, 1)
	assert.ErrorIs(t, err, device.ErrDeviceLost)
	_, err = rt.Memory(ctx, 1)
	assert.ErrorIs(t, err, device.ErrDeviceLost)
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Zero(t, b.reads, "the driver was called for a lost device")
}

func TestVisibilityReportsTheSettingsAtInit(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,0")
	t.Setenv("HIP_VISIBLE_DEVICES", "")
	r := device.New(sim.New())
	assert.Nil(t, r.Stats().Visibility, "nothing before Init")
	require.NoError(t, r.Init(context.Background()))
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	v := r.Stats().Visibility
	assert.Equal(t, "1,0", v["CUDA_VISIBLE_DEVICES"], "the value when the Runtime initialized")
	value, set := v["HIP_VISIBLE_DEVICES"]
	assert.True(t, set, "an empty value is reported: it hides every device")
	assert.Empty(t, value)
}

func (b *panickingMemory) ReadMemory(int) (driver.Memory, error) {
	b.mu.Lock()
	b.reads++
	b.mu.Unlock()
	panic("the driver's memory read panicked")
}

func (b *panickingMemory) MemoryInfo(o int) (free, total uint64, err error) {
	_, err = b.ReadMemory(o)
	return 0, 0, err
}
