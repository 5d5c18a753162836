package devicetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// watchStopBound is how long the kit gives a health watch to return once its
// context ends: "a few seconds" in driver.HealthWatcher's contract.
const watchStopBound = 3 * time.Second

// checkHealthWatcher runs the watch for a moment, then ends its context: it
// must report only the devices the backend has, return nil within
// stopBound (watchStopBound, but in the kit's own tests), and report nothing
// once it has returned. A watch that cannot watch at all returns an error
// wrapping ErrNotSupported at once.
func checkHealthWatcher(c *checker, hw driver.HealthWatcher, n int, stopBound time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var returned atomic.Bool
	var mu sync.Mutex
	var events []healthwatch.Event
	first := make(chan struct{})
	var once sync.Once
	report := func(ev healthwatch.Event) {
		if returned.Load() {
			c.errorf("WatchHealth reported %s on device %d after it had returned", ev.Kind, ev.Ordinal)
			return
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		once.Do(func() { close(first) })
	}
	done := make(chan error, 1)
	go func() {
		err := hw.WatchHealth(ctx, report)
		returned.Store(true)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, driver.ErrNotSupported) {
			c.errorf("WatchHealth returned %v before its context ended: want it to watch until then, or an error wrapping driver.ErrNotSupported at once", err)
		}
		return
	case <-first:
	case <-time.After(time.Second): // a watch may have nothing to say yet
	}
	cancel()
	select {
	case err := <-done:
		// ErrNotSupported may have come at once, beside an event that says
		// why each device is unwatched.
		if err != nil && !errors.Is(err, driver.ErrNotSupported) {
			c.errorf("WatchHealth returned %v at its context's end: want nil", err)
		}
	case <-time.After(stopBound):
		c.errorf("WatchHealth did not return within %s of its context's end: a Runtime's Shutdown would have to abandon it", stopBound)
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range events {
		if ev.Ordinal < -1 || ev.Ordinal >= n {
			c.errorf("WatchHealth reported %s on device %d: the backend has devices 0..%d (-1 for the whole watch)", ev.Kind, ev.Ordinal, n-1)
		}
		if ev.Action < healthwatch.Inform || ev.Action > healthwatch.Recover {
			c.errorf("WatchHealth reported %s with action %d, which is none of driver's", ev.Kind, ev.Action)
		}
	}
}

// checkCanary runs the canary on every device, two at once: each must pass,
// or fail with a *DriverError of the backend's.
func checkCanary(c *checker, cr driver.CanaryRunner, n int) {
	var wg sync.WaitGroup
	for ordinal := range n {
		wg.Go(func() {
			if err := cr.Canary(ordinal); err != nil {
				var de *driver.DriverError
				if !errors.As(err, &de) {
					c.errorf("Canary(%d) = %q: want nil, or a *driver.DriverError (Sticky where the device is unusable)", ordinal, err)
				}
			}
		})
	}
	wg.Wait()
}

// checkMemoryReader reads every device's memory: a figure must be whole
// (free no more than total, a total, a source), or the error must say
// unknown (ErrNotSupported), never a wrong number; a bad ordinal is refused.
func checkMemoryReader(c *checker, mr driver.MemoryReader, n int) {
	for ordinal := range n {
		m, err := mr.ReadMemory(ordinal)
		switch {
		case err != nil && !errors.Is(err, driver.ErrNotSupported):
			c.errorf("ReadMemory(%d) failed with %q: want figures, or an error wrapping driver.ErrNotSupported (unknown)", ordinal, err)
		case err == nil && (m.Total == 0 || m.Free > m.Total || m.Source == ""):
			c.errorf("ReadMemory(%d) = %+v: want free no more than a total, and where they came from", ordinal, m)
		}
	}
	for _, bad := range []int{-1, n} {
		if _, err := mr.ReadMemory(bad); !errors.Is(err, driver.ErrInvalidDevice) {
			c.errorf("ReadMemory(%d) = %v: want an error wrapping driver.ErrInvalidDevice", bad, err)
		}
	}
}
