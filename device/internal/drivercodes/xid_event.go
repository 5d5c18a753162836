package drivercodes

import (
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// XidEvent is the health event an Xid on device ordinal makes, as every backend
// that reports Xids reports it: named by the catalog's mnemonic, with its
// description, the action ClassifyXid gives, and a hint from the catalog's
// bucket.
func XidEvent(ordinal, code int, at time.Time) driver.HealthEvent {
	entry, action := ClassifyXid(code)
	ev := driver.HealthEvent{Ordinal: ordinal, Kind: driver.HealthXid, Code: code, Name: entry.Mnemonic, At: at,
		Message: fmt.Sprintf("Xid %d: %s", code, entry.Description)}
	bucket := entry.Immediate
	if bucket == "" {
		bucket = "no resolution bucket"
	}
	switch action {
	case XidLose:
		ev.Action = driver.HealthLose
		ev.Hint = "NVIDIA's Xid catalog (" + XidCatalogVersion + ") says " + bucket + ": the device is out of service until then; restart the process after"
	case XidCount:
		ev.Action = driver.HealthCount
		ev.Hint = "NVIDIA's Xid catalog (" + XidCatalogVersion + ") says " + bucket + ": counted against the device, which serves on"
	default:
		ev.Action = driver.HealthInform
	}
	return ev
}
