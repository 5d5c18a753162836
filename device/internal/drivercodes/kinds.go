package drivercodes

import (
	"errors"

	"github.com/gpuinit/gpuinit/device/driver"
)

// kinds name what an error of gpuinit's is, by the sentinel it wraps: one
// table, shared by the preflight child's report (so that the parent rebuilds
// the child's error with the same sentinel), the health status and
// gpuprobe's report.
//
// kinds is every kind and its sentinel, most specific first: a sentinel that
// wraps another (ErrNotReady wraps ErrNoDevice) comes before it.
var kinds = []struct {
	name string
	err  error
}{
	{"device-lost", driver.ErrDeviceLost},
	{"hang", driver.ErrInitHung},
	{"bad-setting", driver.ErrBadSetting},
	{"not-ready", driver.ErrNotReady},
	{"driver-too-old", driver.ErrDriverTooOld},
	{"not-compiled", driver.ErrNotCompiled},
	{"no-driver", driver.ErrDriverNotFound},
	{"driver-mismatch", driver.ErrDriverMismatch},
	{"no-device", driver.ErrNoDevice},
	{"invalid-device", driver.ErrInvalidDevice},
	{"not-supported", driver.ErrNotSupported},
	{"not-initialized", driver.ErrNotInitialized},
}

// KindOf is the kind of err: the name of the first sentinel in kinds that
// it wraps, or "" for none.
func KindOf(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// KindSentinel is the sentinel a kind names, or nil for a name not in kinds.
func KindSentinel(kind string) error {
	for _, k := range kinds {
		if k.name == kind {
			return k.err
		}
	}
	return nil
}
