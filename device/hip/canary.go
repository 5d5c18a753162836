//go:build linux && cgo && !nohip

package hip

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// canarySteps name the calls of the canary's round trip, by step.
var canarySteps = [...]string{1: "hipMalloc", 2: "hipMemset", 3: "hipMemcpy", 4: "hipFree"}

// Canary runs the readiness canary's round trip on device ordinal, made
// current as Do makes it: hipMalloc of 4 bytes, hipMemset of each to the low
// byte of driver.CanaryPattern, hipMemcpy back, hipFree, in one cgo call. A
// failed call returns its *DriverError; a pattern read back wrong returns a
// sticky *DriverError.
func (b *Backend) Canary(ordinal int) error {
	return b.Do(ordinal, func() error {
		want := byte(driver.CanaryPattern & 0xff)
		c := C.gpuinit_hipCanary(C.uchar(want))
		if c.step != 0 {
			return check(canarySteps[c.step], int(c.r))
		}
		for _, got := range c.got {
			if byte(got) != want {
				return &driver.DriverError{Backend: "hip", Op: "canary", Sticky: true, // no code: Name stays empty
					Message: fmt.Sprintf("pattern mismatch: device %d gave back %v for the 4 bytes of %#02x it set: its memory or copy engine is broken", ordinal, c.got, want),
					Hint:    "reset the GPU (amd-smi reset --gpureset) and restart the process; if it recurs, the GPU needs service"}
			}
		}
		return nil
	})
}
