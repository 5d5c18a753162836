package sim

import (
	"context"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/internal/xid"
)

// WatchHealth watches the simulated devices until ctx ends: every device is
// watched, and the events InjectXid and InjectHealthEvent make are reported
// as a real backend's watch reports them. It uses no CPU between events.
func (b *Backend) WatchHealth(ctx context.Context, report func(driver.HealthEvent)) error {
	events := make(chan driver.HealthEvent)
	b.mu.Lock()
	if b.watches == nil {
		b.watches = map[chan driver.HealthEvent]context.Context{}
	}
	b.watches[events] = ctx
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.watches, events)
		b.mu.Unlock()
	}()
	for ordinal := range b.devices {
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthWatching, At: time.Now()})
		// A simulated device has no counters: read at once, and empty, so
		// that nobody waits for them.
		report(driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthRead, Counters: &driver.HealthCounters{}, At: time.Now()})
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			report(ev)
		}
	}
}

// InjectXid simulates NVIDIA's driver raising Xid code on device ordinal:
// every health watch running on b reports it, classified by NVIDIA's Xid
// catalog as the cuda backend classifies it (79, fallen off the bus, loses
// the device; 13, an application's error, is counted). It returns once every
// watch has taken the event, or has stopped.
func (b *Backend) InjectXid(ordinal, code int) {
	b.InjectHealthEvent(xid.Event(ordinal, code, time.Now()))
}

// InjectHealthEvent has every health watch running on b report ev (an ECC
// error, a RAS rise, a watch error); see InjectXid.
func (b *Backend) InjectHealthEvent(ev driver.HealthEvent) {
	b.mu.Lock()
	watches := make(map[chan driver.HealthEvent]context.Context, len(b.watches))
	for ch, ctx := range b.watches {
		watches[ch] = ctx
	}
	b.mu.Unlock()
	for ch, ctx := range watches {
		select {
		case ch <- ev:
		case <-ctx.Done():
		}
	}
}

// Canary simulates the readiness canary's round trip: it fails as a lost
// device's calls do (LoseDevice), with the code given, else succeeds.
func (b *Backend) Canary(ordinal int) error {
	if err := b.checkDevice(ordinal); err != nil {
		return err
	}
	return b.lostError("cuMemsetD32_v2", ordinal)
}
