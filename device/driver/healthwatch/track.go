package healthwatch

import (
	"context"
	"time"
)

// CallTracker holds a health watch's calls into the driver to a deadline. A
// Runtime puts one in the context it gives WatchHealth.
type CallTracker interface {
	// Begin marks the start of call op ("nvmlDeviceGetFieldValues") on
	// device ordinal (-1 for a call about no one device); the returned func
	// marks its end. waits is how long the call blocks by design (an event
	// wait's own timeout), which the deadline comes on top of; 0 for a call
	// that should return at once. Safe for concurrent use; it never blocks.
	Begin(ordinal int, op string, waits time.Duration) (end func())
}

type callTrackerKey struct{}

// WithCallTracker returns ctx carrying t, for TrackCall.
func WithCallTracker(ctx context.Context, t CallTracker) context.Context {
	return context.WithValue(ctx, callTrackerKey{}, t)
}

// TrackCall marks the start of a call into the driver, for the CallTracker
// ctx carries, and returns the func that marks its end; without a tracker
// both do nothing. A health watch calls it around every driver call:
//
//	end := healthwatch.TrackCall(ctx, ordinal, "nvmlDeviceGetFieldValues")
//	r := C.gpuinit_nvmlFieldValues(...)
//	end()
func TrackCall(ctx context.Context, ordinal int, op string) (end func()) {
	return TrackWait(ctx, ordinal, op, 0)
}

// TrackWait is TrackCall for a call that blocks by design for up to waits,
// an event wait with its own timeout ("nvmlEventSetWait_v2" for a second):
// the deadline starts once waits has passed, so that a quiet wait is never
// taken for a hung one.
func TrackWait(ctx context.Context, ordinal int, op string, waits time.Duration) (end func()) {
	if t, ok := ctx.Value(callTrackerKey{}).(CallTracker); ok {
		return t.Begin(ordinal, op, waits)
	}
	return func() {}
}
