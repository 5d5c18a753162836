package watch

// Device's Stats copies its slices and maps for each caller. The health
// probes of package device/health answer at every request and allocate
// nothing, so they read the Runtime's own view instead. The reader is set by
// package device in its init and never changed; what it returns is shared
// with every probe and never modified. These two functions carry it without
// an import of device, which imports this package.

var sharedStats any // func(R) S, set once by device's init

// SetSharedStats sets the function that reads a Runtime's Stats without
// copies. Package device calls it once, in its init.
func SetSharedStats[R, S any](read func(R) S) { sharedStats = read }

// SharedStats reads r's Stats without copies, through the function device
// set. It panics if R and S are not the types device set it with.
func SharedStats[R, S any](r R) S { return sharedStats.(func(R) S)(r) }
