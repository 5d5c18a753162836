package driver

import (
	"context"
	"time"
)

// HealthWatcher is implemented by backends that can watch their devices'
// health after init: NVIDIA's NVML events (Xid critical errors, single- and
// double-bit ECC) and counters, amdgpu's RAS error counters.
type HealthWatcher interface {
	// WatchHealth watches the devices until ctx ends, calling report for
	// each event from the goroutine that called it, and then returns nil.
	// Where the devices cannot be watched at all (no NVML, no event API)
	// it returns an error wrapping ErrNotSupported at once: their health is
	// unknown. A failure while watching is reported as a HealthWatchError
	// event and the watch is retried with backoff: it never loses a
	// device. It is called once per Runtime, after Init succeeded; it must
	// use no CPU between events (a blocking wait, or a period of seconds),
	// and must return within a few seconds of ctx's end: a Runtime's Close
	// waits two (device.HealthStopGrace), then abandons a watch still in a
	// driver call, and ignores what it reports from ctx's end on.
	WatchHealth(ctx context.Context, report func(HealthEvent)) error
}

// HealthKind is what a HealthEvent reports.
type HealthKind string

// The kinds of health events.
const (
	HealthWatching   HealthKind = "watching"    // the device's health is watched from now on
	HealthUnwatched  HealthKind = "unwatched"   // the device cannot be watched (Message says why): its health is unknown
	HealthXid        HealthKind = "xid"         // an Xid error; Code is the Xid
	HealthECC        HealthKind = "ecc"         // an ECC error: corrected, or not (Action says)
	HealthRAS        HealthKind = "ras"         // amdgpu's RAS counters rose; Code is by how much
	HealthRead       HealthKind = "counters"    // Counters holds the device's latest counters
	HealthWatchError HealthKind = "watch-error" // the watch failed and will be retried; Message says why
)

// HealthAction is what an event means for the device.
type HealthAction int

// The actions, from least to most severe.
const (
	HealthInform HealthAction = iota // nothing is wrong with the device: a state of the watch, or counters
	HealthCount                      // an error counted against the device, which stays in service
	HealthLose                       // the device is unusable until a reset or service
)

// HealthEvent is one thing a HealthWatcher saw.
type HealthEvent struct {
	Ordinal  int // the Runtime's device; -1 for the whole watch
	Kind     HealthKind
	Action   HealthAction
	Code     int    // the Xid, the count
	Name     string // the error's name, such as "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
	Message  string // what happened, in words
	Hint     string // what to do about it
	Counters *HealthCounters
	At       time.Time
}

// HealthCounters are the counters a server should see about a device, as
// the driver keeps them; a field the driver cannot read is nil.
type HealthCounters struct {
	ECCEnabled          *bool    `json:"ecc_enabled,omitempty"`
	ECCCorrected        *uint64  `json:"ecc_corrected,omitempty"`   // volatile: since the driver loaded
	ECCUncorrected      *uint64  `json:"ecc_uncorrected,omitempty"` // volatile
	RowRemapsPending    *bool    `json:"row_remaps_pending,omitempty"`
	RowRemapFailed      *bool    `json:"row_remap_failed,omitempty"`
	RetiredPages        *uint64  `json:"retired_pages,omitempty"`         // retired for ECC errors, pending ones included; GPUs before Ampere (later ones remap rows)
	RetiredPagesPending *bool    `json:"retired_pages_pending,omitempty"` // a retirement waits for the driver's reload
	Persistence         *bool    `json:"persistence_mode,omitempty"`
	ThrottleReasons     []string `json:"throttle_reasons,omitempty"`
}
