package health

import (
	"context"
	"sync/atomic"
	"time"
)

// WithCanary has readiness also prove that the devices still do work. Once
// the Runtime is ready, a goroutine the Health owns runs
// [device.Runtime.Canary] on each device in service, every period. The
// canary allocates, sets and copies back 4 bytes, under the Runtime's call
// deadline. The probes only read what it found, so readiness never blocks
// on it.
//
// A round trip that fails with a sticky error, or reads back wrong, loses
// the device. One that hangs loses it when the call deadline passes. The
// canary waits for a round trip no longer than a period. It starts no
// second one on that device while one is stuck. Status shows each device's
// last canary. Close stops the goroutine; a round trip stuck in the driver
// stays there. Zero or less turns the canary off.
func WithCanary(period time.Duration) Option { return func(h *Health) { h.canaryPeriod = period } }

// Canary is a device's last readiness canary as JSON.
type Canary struct {
	At         time.Time `json:"at"`
	TookMillis float64   `json:"took_ms"`
	OK         bool      `json:"ok"`
	Error      *Error    `json:"error,omitempty"`
}

// canaries are the canary's last results, by ordinal.
type canaries struct {
	started atomic.Bool
	last    atomic.Pointer[[]Canary]
}

// startCanary starts the canary's goroutine once the Runtime is ready. It
// does nothing if the canary is off or started, or Close was called.
func (h *Health) startCanary() {
	if h.canaryPeriod <= 0 || h.canary.started.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !h.canary.started.CompareAndSwap(false, true) {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(h.canaryPeriod)
		defer t.Stop()
		for {
			h.canaryRound()
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// canaryRound runs the canary on every device in service.
func (h *Health) canaryRound() {
	n, err := h.rt.DeviceCount(h.ctx)
	if err != nil {
		return
	}
	results := make([]Canary, n)
	if prev := h.canary.last.Load(); prev != nil {
		copy(results, *prev)
	}
	for ordinal := range n {
		if h.rt.CheckDevice(ordinal) != nil || h.ctx.Err() != nil {
			continue // lost: its loss says more than a canary could
		}
		ctx, cancel := context.WithTimeout(h.ctx, h.canaryPeriod)
		start := time.Now()
		err := h.rt.Canary(ctx, ordinal)
		cancel()
		c := Canary{At: start, TookMillis: float64(time.Since(start).Microseconds()) / 1000, OK: err == nil}
		if err != nil {
			c.Error = ErrorOf(err)
		}
		results[ordinal] = c
	}
	h.canary.last.Store(&results)
	h.observe(false) // logs a loss the canary found, now
}

// addCanaries adds each device's last canary to s.
func (h *Health) addCanaries(s *Status) {
	p := h.canary.last.Load()
	if p == nil {
		return
	}
	for i := range s.Devices {
		if o := s.Devices[i].Ordinal; o >= 0 && o < len(*p) && !(*p)[o].At.IsZero() {
			c := (*p)[o]
			s.Devices[i].Canary = &c
		}
	}
}
