// Package errkind names what an error of gpuinit's is, by the sentinel it
// wraps: one table, shared by the preflight child's report (so that the
// parent rebuilds the child's error with the same sentinel), the health
// status and gpuprobe's report. The most specific sentinel comes first.
package errkind

import (
	"errors"

	"github.com/gpuinit/gpuinit/device/driver"
)

// table is every kind and its sentinel, most specific first: a sentinel that
// wraps another (ErrNotReady wraps ErrNoDevice) comes before it.
var table = []struct {
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

// Of is the kind of err: the name of the first sentinel in the table it
// wraps, or "" for none.
func Of(err error) string {
	for _, k := range table {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// Sentinel is the sentinel a kind names, or nil for a name not in the table.
func Sentinel(kind string) error {
	for _, k := range table {
		if k.name == kind {
			return k.err
		}
	}
	return nil
}
