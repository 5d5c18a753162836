package watch

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type report struct {
	ordinal int
	op      string
}

// recorder collects what the watch reports as hung.
type recorder struct {
	mu  sync.Mutex
	got []report
}

func (r *recorder) hung(ordinal int, op string, _, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, report{ordinal, op})
}

func (r *recorder) reports() []report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]report(nil), r.got...)
}

var opDraw = "Generate"

func TestACallPastTheDeadlineIsReportedOnceAndOthersNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		w := NewCallWatch(2, 100*time.Millisecond, rec.hung, nil)
		defer w.Close()
		quick := w.Begin(1, &opDraw)
		time.Sleep(50 * time.Millisecond)
		w.End(quick)
		stuck := w.Begin(0, &opDraw)
		time.Sleep(time.Second)
		assert.Equal(t, []report{{0, "Generate"}}, rec.reports(), "the stuck call, once; not the quick one")
		synctest.Wait()
		assert.False(t, w.Scanning(), "nothing but a reported call in flight: the monitor sleeps")
		w.End(stuck)
	})
}

func TestCallsPastTheSlotsAreCountedUnwatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var overflows []int
		w := NewCallWatch(1, time.Minute, func(int, string, time.Duration, time.Duration) {}, func(o int) { overflows = append(overflows, o) })
		defer w.Close()
		var held []*CallSlot
		for range CallSlots {
			s := w.Begin(0, &opDraw)
			require.NotNil(t, s)
			held = append(held, s)
		}
		assert.Nil(t, w.Begin(0, &opDraw), "every slot taken")
		assert.Equal(t, int64(1), w.Unwatched(0))
		assert.Equal(t, []int{0}, overflows, "the overflow is said")
		for _, s := range held {
			w.End(s)
		}
		assert.NotNil(t, w.Begin(0, &opDraw), "slots free again")
	})
}

func TestADeadlineSetLaterWakesTheMonitorForACallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		w := NewCallWatch(1, 0, rec.hung, nil)
		defer w.Close()
		s := w.Begin(0, &opDraw)
		time.Sleep(time.Hour)
		assert.Empty(t, rec.reports(), "off: nothing is held to a deadline")
		w.SetDeadline(100 * time.Millisecond)
		time.Sleep(time.Second)
		assert.Len(t, rec.reports(), 1, "the call in flight is held to the new deadline")
		w.End(s)
	})
}

// TestACallIsReportedHungAtItsDeadline: the monitor scans every
// interval(deadline) while a call is in flight, so a hung call is reported
// once its deadline has passed and at most one interval later: 25 ms at most.
// (The example server's end-to-end test cannot hold it to that, since it
// reads the wall clock, which a loaded machine stretches; here the clock is
// synctest's.)
func TestACallIsReportedHungAtItsDeadline(t *testing.T) {
	for _, deadline := range []time.Duration{40 * time.Millisecond, 300 * time.Millisecond, 5 * time.Second} {
		t.Run(deadline.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reported := make(chan time.Duration, 1)
				w := NewCallWatch(1, deadline, func(_ int, _ string, took, _ time.Duration) { reported <- took }, nil)
				defer w.Close()
				start := time.Now()
				c := w.Begin(0, &opDraw)
				defer w.End(c)
				time.Sleep(deadline - time.Nanosecond)
				synctest.Wait()
				select {
				case took := <-reported:
					t.Fatalf("reported hung after %s, before its deadline of %s", took, deadline)
				default:
				}
				took := <-reported
				at := time.Since(start)
				assert.LessOrEqual(t, at, deadline+interval(deadline), "reported within one scan of the deadline")
				assert.GreaterOrEqual(t, took, deadline, "the time the call is said to have run")
				assert.LessOrEqual(t, took, at, "never more than it ran")
			})
		})
	}
}
