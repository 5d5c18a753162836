package devicetest

import "time"

// DefaultWatchStopBound is the kit's bound on a health watch's return.
const DefaultWatchStopBound = watchStopBound

// WatchStopBound sets how long the kit gives a health watch to return once
// its context ends, for the kit's own tests of a watch that overruns it.
func WatchStopBound(d time.Duration) Option { return func(c *config) { c.watchStop = d } }
