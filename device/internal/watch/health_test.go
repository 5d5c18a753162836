package watch

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripted is a backend whose health watch reports events, then blocks
// until its context ends, or, stuck, for ever (a driver call that never
// returns).
type scripted struct {
	noBackend
	events  []healthwatch.Event
	stuck   chan struct{}
	report  func(healthwatch.Event)
	started chan struct{}
}

// noBackend is a driver.Backend that does nothing: only the watch matters.
type noBackend struct{}

func (noBackend) Name() string                    { return "sim" }
func (noBackend) Init(context.Context) error      { return nil }
func (noBackend) DriverVersion() (int, error)     { return 1, nil }
func (noBackend) Count() (int, error)             { return 2, nil }
func (noBackend) Device(int) (driver.Info, error) { return driver.Info{}, nil }

func (s *scripted) WatchHealth(ctx context.Context, report func(healthwatch.Event)) error {
	s.report = report
	for _, ev := range s.events {
		report(ev)
	}
	close(s.started)
	if s.stuck != nil {
		<-s.stuck
		return nil
	}
	<-ctx.Done()
	return nil
}

func TestEventsLoseCountAndWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changes atomic.Int32
		b := &scripted{started: make(chan struct{}), events: []healthwatch.Event{
			{Ordinal: 0, Kind: healthwatch.KindWatching}, {Ordinal: 1, Kind: healthwatch.KindWatching},
			{Ordinal: 1, Kind: healthwatch.KindXid, Action: healthwatch.Lose, Code: 79, Name: "GPU_HAS_FALLEN_OFF_THE_BUS"},
			{Ordinal: 0, Kind: healthwatch.KindXid, Action: healthwatch.Count, Code: 13},
			{Ordinal: 5, Kind: healthwatch.KindXid, Action: healthwatch.Lose, Code: 79}, // no such device: ignored
		}}
		w := NewHealthWatch("sim", 2, func() { changes.Add(1) }, nil)
		w.Start(b)
		<-b.started
		devices := w.Devices()
		require.Len(t, devices, 2)
		assert.True(t, devices[0].Watched && devices[1].Watched)
		assert.Equal(t, int64(1), devices[0].Counted["xid 13"])
		losses := w.Losses()
		require.Len(t, losses, 1)
		assert.Equal(t, 1, losses[0].Ordinal)
		assert.Equal(t, "xid", losses[0].Source)
		assert.Equal(t, 79, losses[0].Err.Code)
		assert.Equal(t, map[int]int64{0: 1}, w.Counts())
		assert.Positive(t, changes.Load())
		again := w.Lose(1, "engine", &driver.DriverError{})
		assert.Equal(t, "xid", again.Source, "the first loss is kept")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.False(t, w.Stop(ctx), "a watch that returns at its context's end is not abandoned")
	})
}

func TestStopAbandonsAWatchStuckInTheDriverAndDropsItsEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &scripted{started: make(chan struct{}), stuck: make(chan struct{}),
			events: []healthwatch.Event{{Ordinal: 0, Kind: healthwatch.KindWatching}}}
		w := NewHealthWatch("sim", 1, func() {}, nil)
		w.Start(b)
		<-b.started
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		assert.True(t, w.Stop(ctx), "stuck past ctx: abandoned")
		assert.True(t, w.Abandoned())
		assert.True(t, w.Snapshot().Abandoned, "in the same snapshot as the devices' health that says so")
		d := w.Devices()[0]
		assert.False(t, d.Watched)
		assert.Contains(t, d.Why, "abandoned")
		b.report(healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindXid, Action: healthwatch.Lose, Code: 79})
		assert.Empty(t, w.Losses(), "an event the abandoned watch reports later is dropped")
		close(b.stuck)
	})
}

// TestAWatchCanceledBeforeItStartsNeverRuns: Shutdown may cancel the watch
// between the Runtime's look at its closed state and Start. Start then
// starts nothing, so no watch runs for the rest of the process.
func TestAWatchCanceledBeforeItStartsNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &scripted{started: make(chan struct{}), events: []healthwatch.Event{{Ordinal: 0, Kind: healthwatch.KindWatching}}}
		w := NewHealthWatch("sim", 1, func() {}, nil)
		w.Cancel()
		w.Start(b)
		synctest.Wait()
		select {
		case <-b.started:
			t.Fatal("the watch ran after Cancel")
		default:
		}
		assert.False(t, w.Devices()[0].Watched)
		abandoned, hungIn := w.Wait(context.Background())
		assert.False(t, abandoned)
		assert.Empty(t, hungIn)
	})
}

// TestEachChangeShowsOneMoment: every change the watch announces shows an
// event whole. An event that loses a device, and the device's own verdict
// and recovery action from it, are seen together, never the loss alone (a
// Stats read then said "lost" with the driver's recovery action unset).
func TestEachChangeShowsOneMoment(t *testing.T) {
	lose := healthwatch.Event{Ordinal: 1, Kind: healthwatch.KindRecovery, Action: healthwatch.Lose,
		Recovery: healthwatch.RecoveryResetGPU, Message: "recovery action reset-gpu"}
	count := healthwatch.Event{Ordinal: 0, Kind: healthwatch.KindXid, Action: healthwatch.Count, Code: 13}
	var w *HealthWatch
	var seen []Snapshot
	w = NewHealthWatch("sim", 2, func() { seen = append(seen, w.Snapshot()) }, nil)
	w.apply(lose)
	w.apply(count)
	require.NotEmpty(t, seen)
	for i, s := range seen {
		lost := len(s.Losses) == 1
		assert.Equal(t, lost, s.Devices[1].Recovery == healthwatch.RecoveryResetGPU, "change %d: lost and its recovery action", i)
		assert.Equal(t, lost, len(s.Devices[1].Conditions) == 1, "change %d: lost and its condition", i)
		counted := s.Counts[0] == 1
		assert.Equal(t, counted, s.Devices[0].Counted["xid 13"] == 1, "change %d: counted twice alike", i)
	}
	last := seen[len(seen)-1]
	assert.Len(t, last.Losses, 1)
	assert.Equal(t, map[int]int64{0: 1}, last.Counts)
}

// TestCountingAnErrorCopiesNoDevice: an error counted on a call's path
// publishes the counts with the last snapshot's devices, not a new copy of
// each device and its map.
func TestCountingAnErrorCopiesNoDevice(t *testing.T) {
	w := NewHealthWatch("sim", 2, func() {}, nil)
	before := w.Snapshot()
	w.Count(1)
	w.Lose(0, "engine", &driver.DriverError{})
	after := w.Snapshot()
	assert.Same(t, &before.Devices[0], &after.Devices[0], "the devices' copy is shared")
	assert.Equal(t, map[int]int64{1: 1}, after.Counts)
	assert.Len(t, after.Losses, 1)
}
