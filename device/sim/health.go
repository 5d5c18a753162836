package sim

import (
	"context"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
)

// WatchHealth watches the simulated devices until ctx ends: every device is
// watched, and the events InjectXid and InjectHealthEvent make are reported
// as a real backend's watch reports them. It uses no CPU between events.
func (b *Backend) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	events := make(chan watchMsg)
	b.mu.Lock()
	if b.watches == nil {
		b.watches = map[chan watchMsg]context.Context{}
	}
	b.watches[events] = ctx
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.watches, events)
		b.mu.Unlock()
	}()
	for ordinal := range b.devices {
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching, At: time.Now()})
		// A simulated device has no counters: read at once, and empty, so
		// that nobody waits for them.
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindCounters, Counters: &healthwatch.Counters{}, At: time.Now()})
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-events:
			if m.hang != nil {
				// A driver call that does not return, deaf to ctx as a real
				// one is: only its release ends it.
				end := healthwatch.TrackCall(ctx, m.hang.ordinal, m.hang.op)
				close(m.hang.started)
				<-m.hang.release
				end()
				continue
			}
			report(m.ev)
		}
	}
}

// InjectXid simulates NVIDIA's driver raising Xid code on device ordinal:
// every health watch running on b reports it, classified by NVIDIA's Xid
// catalog as the cuda backend classifies it (79, fallen off the bus, loses
// the device; 13, an application's error, is counted). It returns once every
// watch has taken the event, or has stopped.
func (b *Backend) InjectXid(ordinal, code int) {
	b.InjectHealthEvent(drivercodes.XidEvent(ordinal, code, time.Now()))
}

// InjectHealthEvent has every health watch running on b report ev (an ECC
// error, a RAS rise, a watch error); see InjectXid.
func (b *Backend) InjectHealthEvent(ev healthwatch.Event) { b.send(watchMsg{ev: ev}) }

// HangHealthWatch simulates a driver call of the health watch that never
// returns, as an NVML call on a wedged driver: every health watch running
// on b enters call op on device ordinal (-1 for a call about no device),
// through healthwatch.TrackCall, and stays in it, deaf to its context, until
// release is called. It returns once every watch is in the call, or has
// stopped. release may be called more than once.
func (b *Backend) HangHealthWatch(ordinal int, op string) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	sent := b.sendEach(func() watchMsg {
		return watchMsg{hang: &watchHang{ordinal: ordinal, op: op, started: make(chan struct{}), release: ch}}
	})
	for _, m := range sent {
		<-m.hang.started
	}
	return release
}

// watchMsg is what a running watch is sent: an event to report, or a call
// to hang in.
type watchMsg struct {
	ev   healthwatch.Event
	hang *watchHang
}

// watchHang is a hung call of a watch's: started is closed once the watch
// is in it, and release ends it.
type watchHang struct {
	ordinal          int
	op               string
	started, release chan struct{}
}

// send sends m to every running watch.
func (b *Backend) send(m watchMsg) { b.sendEach(func() watchMsg { return m }) }

// sendEach sends each running watch the message msg makes for it, skipping
// a watch whose context has ended, and returns those it took.
func (b *Backend) sendEach(msg func() watchMsg) (sent []watchMsg) {
	b.mu.Lock()
	watches := make(map[chan watchMsg]context.Context, len(b.watches))
	for ch, ctx := range b.watches {
		watches[ch] = ctx
	}
	b.mu.Unlock()
	for ch, ctx := range watches {
		m := msg()
		select {
		case ch <- m:
			sent = append(sent, m)
		case <-ctx.Done():
		}
	}
	return sent
}

// Canary simulates the readiness canary's round trip: it fails as a lost
// device's calls do (LoseDevice), with the code given, else succeeds.
func (b *Backend) Canary(ordinal int) error {
	if err := b.checkDevice(ordinal); err != nil {
		return err
	}
	return b.lostError("cuMemsetD32_v2", ordinal)
}
