package watch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMonitorCallPastItsDeadlineMarksItsDevicesUntilItReturns(t *testing.T) {
	cases := []struct {
		name         string
		callDeadline time.Duration
		ordinal      int
		held         time.Duration // how long the call is held to
		marked       []bool        // which devices are marked
	}{
		{"a call on one device marks that device", 2 * time.Second, 1, 2 * time.Second, []bool{false, true}},
		{"a call about no one device marks every device", 2 * time.Second, -1, 2 * time.Second, []bool{true, true}},
		{"the call deadline off still holds it to the bound", 0, 0, MaxMonitorDeadline, []bool{true, false}},
		{"a longer call deadline is bounded", time.Hour, 0, MaxMonitorDeadline, []bool{true, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := NewHealthWatch("sim", 2, func() {}, func() time.Duration { return c.callDeadline })
				end := tracker{w}.Begin(c.ordinal, "nvmlEventSetWait_v2", 0)
				time.Sleep(c.held - time.Millisecond)
				synctest.Wait()
				for _, d := range w.Devices() {
					assert.Empty(t, d.HungCall, "not hung before its deadline")
				}
				time.Sleep(2 * time.Millisecond)
				synctest.Wait()
				for i, d := range w.Devices() {
					if c.marked[i] {
						assert.Equal(t, "nvmlEventSetWait_v2", d.HungCall, "device %d", i)
						assert.Contains(t, d.WatchError, "nvmlEventSetWait_v2")
						assert.Contains(t, d.WatchError, "health is unknown")
						assert.Equal(t, int64(1), d.WatchErrors, "reported once")
					} else {
						assert.Empty(t, d.HungCall, "device %d", i)
					}
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				for _, d := range w.Devices() {
					assert.LessOrEqual(t, d.WatchErrors, int64(1), "a call hung for an hour is reported once")
				}
				end()
				for _, d := range w.Devices() {
					assert.Empty(t, d.HungCall, "the call returned")
				}
			})
		})
	}
}

func TestAMonitorCallThatReturnsInTimeMarksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes int
		w := NewHealthWatch("sim", 1, func() { changes++ }, func() time.Duration { return time.Second })
		for range 100 {
			end := tracker{w}.Begin(0, "nvmlDeviceGetFieldValues", 0)
			time.Sleep(900 * time.Millisecond)
			end()
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, w.Devices()[0].HungCall)
		assert.Zero(t, changes, "no change to publish")
	})
}

// tracked is a backend whose watch enters a call it never leaves.
type tracked struct {
	noBackend
	entered chan struct{}
	release chan struct{}
}

func (b *tracked) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	report(healthwatch.Event{Ordinal: -1, Kind: healthwatch.KindWatching})
	end := healthwatch.TrackCall(ctx, 0, "rsmi_event_notification_get")
	close(b.entered)
	<-b.release // deaf to ctx, as a hung driver call is
	end()
	return nil
}

func TestTheWatchsContextCarriesTheTrackerAndStopKeepsItsOwnAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &tracked{entered: make(chan struct{}), release: make(chan struct{})}
		w := NewHealthWatch("sim", 1, func() {}, func() time.Duration { return time.Second })
		w.Start(b)
		<-b.entered
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, "rsmi_event_notification_get", w.Devices()[0].HungCall, "the backend's call is tracked")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.True(t, w.Stop(ctx), "stuck in the call: abandoned")
		close(b.release)
		synctest.Wait()
		d := w.Devices()[0]
		assert.Contains(t, d.Why, "abandoned")
		assert.Equal(t, "rsmi_event_notification_get", d.HungCall, "a late return after Stop changes nothing")
	})
}

func TestAWaitsOwnTimeoutComesBeforeItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewHealthWatch("cuda", 1, func() {}, func() time.Duration { return 300 * time.Millisecond })
		end := tracker{w}.Begin(0, "nvmlEventSetWait_v2", time.Second)
		time.Sleep(time.Second + 299*time.Millisecond)
		synctest.Wait()
		assert.Empty(t, w.Devices()[0].HungCall, "a second's quiet wait, within its deadline after it")
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, "nvmlEventSetWait_v2", w.Devices()[0].HungCall, "past its timeout and its deadline")
		assert.Contains(t, w.Devices()[0].WatchError, "1.3s")
		end()
	})
}
