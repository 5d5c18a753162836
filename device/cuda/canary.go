//go:build linux && cgo && !nocuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/gpuinit/gpuinit/device/driver"
)

// canarySteps name the calls of the canary's round trip, by step.
var canarySteps = [...]string{1: "cuMemAlloc_v2", 2: "cuMemsetD32_v2", 3: "cuMemcpyDtoH_v2", 4: "cuMemFree_v2"}

// Canary runs the readiness canary's round trip on device ordinal, in its
// primary context (retained at its first use, as Do does): cuMemAlloc_v2 of
// 4 bytes, cuMemsetD32_v2 to driver.CanaryPattern, cuMemcpyDtoH_v2 back, and
// cuMemFree_v2, in one cgo call. A failed call returns its *DriverError,
// classified by the code table (sticky codes such as 700 and 719 marked so);
// a pattern read back wrong returns a sticky *DriverError.
func (b *Backend) Canary(ordinal int) error {
	return b.Do(ordinal, func() error {
		c := C.gpuinit_cuCanary(C.uint(driver.CanaryPattern))
		if c.step != 0 {
			return check(canarySteps[c.step], result(c.r))
		}
		if got := uint32(c.got); got != driver.CanaryPattern {
			return &driver.DriverError{Backend: "cuda", Op: "canary", Sticky: true, // no code: Name stays empty
				Message: fmt.Sprintf("pattern mismatch: device %d gave back %#08x for the %#08x it set: its memory or copy engine is broken", ordinal, got, driver.CanaryPattern),
				Hint:    "reset the GPU (nvidia-smi -r) and restart the process; if it recurs, the GPU needs service"}
		}
		return nil
	})
}
