// Package healthwatch is the vocabulary of a device's health, shared by the
// backends that watch it and by package device, which weighs it.
//
// A backend's health watch (driver.HealthWatcher) reports an [Event] for
// each thing it sees: its [Kind] (an Xid, an ECC error, the driver's recovery
// action, the fabric's state), what it means for the device (an [Action]:
// [Inform], [Count], [Degrade], [Lose] or [Recover]), and the [Counters] the
// driver keeps. It brackets each call it makes into a vendor library with
// [TrackCall], or [TrackWait] for an event wait, so that the [CallTracker] a
// Runtime puts in its context holds the call to a deadline.
//
// Package device weighs the events into each device's [Verdict] and keeps
// the driver's verdicts that are not healthy as [Condition] values. The
// health status (package health) and the DRA feed read them from there.
//
// The types are plain data: a value is safe to read from any goroutine once
// built, and is not changed after it is reported. TrackCall and TrackWait are safe for concurrent use; without a tracker in
// their context they do nothing.
package healthwatch
