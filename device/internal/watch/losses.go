package watch

import (
	"maps"
	"slices"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Loss is a device lost for the rest of the process, and why.
type Loss struct {
	Ordinal int
	Source  string              // who saw it lost: engine, deadline, xid, ecc, ras, canary…
	Err     *driver.DriverError // the first error that lost it
	At      time.Time
}

// Lose marks device ordinal lost by source for de, unless it is lost
// already, and returns its loss: the first one, which is kept. Safe from
// many goroutines; changed is called before it returns when it lost the
// device.
func (w *HealthWatch) Lose(ordinal int, source string, de *driver.DriverError) Loss {
	w.mu.Lock()
	l, lost := w.lose(ordinal, source, de)
	if lost {
		w.publishLosses()
	}
	w.mu.Unlock()
	if lost {
		w.changed()
	}
	return l
}

// lose is Lose with w.mu held, before the change is published; lost
// reports whether it lost the device now.
func (w *HealthWatch) lose(ordinal int, source string, de *driver.DriverError) (l Loss, lost bool) {
	for _, l := range w.losses {
		if l.Ordinal == ordinal {
			return l, false
		}
	}
	l = Loss{Ordinal: ordinal, Source: source, Err: de, At: time.Now()}
	losses := append(slices.Clone(w.losses), l)
	slices.SortFunc(losses, func(a, b Loss) int { return a.Ordinal - b.Ordinal })
	w.losses = losses
	return l, true
}

// Count counts an error against device ordinal that leaves it in service.
func (w *HealthWatch) Count(ordinal int) {
	w.mu.Lock()
	w.count(ordinal)
	w.publishLosses()
	w.mu.Unlock()
	w.changed()
}

// count is Count with w.mu held, before the change is published.
func (w *HealthWatch) count(ordinal int) {
	counts := maps.Clone(w.counts)
	if counts == nil {
		counts = map[int]int64{}
	}
	counts[ordinal]++
	w.counts = counts
}

// Find returns device ordinal's loss, if it is lost, without a lock or an
// allocation.
func (w *HealthWatch) Find(ordinal int) (Loss, bool) {
	for _, l := range w.Losses() {
		if l.Ordinal == ordinal {
			return l, true
		}
	}
	return Loss{}, false
}

// Losses are the lost devices, by ordinal: shared, never modified.
func (w *HealthWatch) Losses() []Loss { return w.published.Load().Losses }

// Counts are the errors counted per device: shared, never modified.
func (w *HealthWatch) Counts() map[int]int64 { return w.published.Load().Counts }
