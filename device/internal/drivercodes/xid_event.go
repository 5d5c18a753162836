package drivercodes

import (
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// XidEvent is the health event an Xid on device ordinal makes, as every backend
// that reports Xids reports it: named by the catalog's mnemonic, with its
// description, the action ClassifyXid gives, and a hint from the catalog's
// bucket.
func XidEvent(ordinal, code int, at time.Time) healthwatch.Event {
	entry, action := ClassifyXid(code)
	ev := healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindXid, Code: code, Name: entry.Mnemonic, At: at,
		Message: fmt.Sprintf("Xid %d: %s", code, entry.Description)}
	bucket := entry.Immediate
	if bucket == "" {
		bucket = "no resolution bucket"
	}
	switch action {
	case XidLose:
		ev.Action = healthwatch.Lose
		ev.Hint = "NVIDIA's Xid catalog (" + XidCatalogVersion + ") says " + bucket + ": the device is out of service until then; restart the process after"
	case XidCount:
		ev.Action = healthwatch.Count
		ev.Hint = "NVIDIA's Xid catalog (" + XidCatalogVersion + ") says " + bucket + ": counted against the device, which serves on"
	default:
		ev.Action = healthwatch.Inform
	}
	return ev
}
