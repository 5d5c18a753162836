package watch

import (
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
	w.lossMu.Lock()
	if l, ok := w.Find(ordinal); ok {
		w.lossMu.Unlock()
		return l
	}
	l := Loss{Ordinal: ordinal, Source: source, Err: de, At: time.Now()}
	losses := append(slices.Clone(w.Losses()), l)
	slices.SortFunc(losses, func(a, b Loss) int { return a.Ordinal - b.Ordinal })
	w.losses.Store(&losses)
	w.lossMu.Unlock()
	w.changed()
	return l
}

// Count counts an error against device ordinal that leaves it in service.
func (w *HealthWatch) Count(ordinal int) {
	w.lossMu.Lock()
	counts := make(map[int]int64, len(w.Counts())+1)
	for k, v := range w.Counts() {
		counts[k] = v
	}
	counts[ordinal]++
	w.counts.Store(&counts)
	w.lossMu.Unlock()
	w.changed()
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
func (w *HealthWatch) Losses() []Loss {
	if p := w.losses.Load(); p != nil {
		return *p
	}
	return nil
}

// Counts are the errors counted per device: shared, never modified.
func (w *HealthWatch) Counts() map[int]int64 {
	if p := w.counts.Load(); p != nil {
		return *p
	}
	return nil
}
