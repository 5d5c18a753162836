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
	// and must return within a few seconds of ctx's end: a Runtime's Shutdown
	// waits until its ctx ends, then abandons a watch still in a
	// driver call, and ignores what it reports from ctx's end on.
	//
	// Every call it makes into a vendor library (the library's init, a
	// counters read) goes through TrackCall with ctx; an event wait goes
	// through TrackWait with its timeout. So the Runtime holds each to a
	// deadline: a call that hangs makes the devices' health unknown, naming
	// the call, and never blocks a status, readiness or shutdown.
	WatchHealth(ctx context.Context, report func(HealthEvent)) error
}

// CallTracker holds a health watch's calls into the driver to a deadline. A
// Runtime puts one in the context it gives WatchHealth.
type CallTracker interface {
	// Begin marks the start of call op ("nvmlDeviceGetFieldValues") on
	// device ordinal (-1 for a call about no one device); the returned func
	// marks its end. waits is how long the call blocks by design (an event
	// wait's own timeout), which the deadline comes on top of; 0 for a call
	// that should return at once. Safe for concurrent use; it never blocks.
	Begin(ordinal int, op string, waits time.Duration) (end func())
}

type callTrackerKey struct{}

// WithCallTracker returns ctx carrying t, for TrackCall.
func WithCallTracker(ctx context.Context, t CallTracker) context.Context {
	return context.WithValue(ctx, callTrackerKey{}, t)
}

// TrackCall marks the start of a call into the driver, for the CallTracker
// ctx carries, and returns the func that marks its end; without a tracker
// both do nothing. A health watch calls it around every driver call:
//
//	end := driver.TrackCall(ctx, ordinal, "nvmlDeviceGetFieldValues")
//	r := C.gpuinit_nvmlFieldValues(...)
//	end()
func TrackCall(ctx context.Context, ordinal int, op string) (end func()) {
	return TrackWait(ctx, ordinal, op, 0)
}

// TrackWait is TrackCall for a call that blocks by design for up to waits,
// an event wait with its own timeout ("nvmlEventSetWait_v2" for a second):
// the deadline starts once waits has passed, so that a quiet wait is never
// taken for a hung one.
func TrackWait(ctx context.Context, ordinal int, op string, waits time.Duration) (end func()) {
	if t, ok := ctx.Value(callTrackerKey{}).(CallTracker); ok {
		return t.Begin(ordinal, op, waits)
	}
	return func() {}
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

	// The driver's own verdicts. Each is reported when it changes (and once
	// at the start, where the driver can say), never only in counters.
	HealthRecovery HealthKind = "recovery-action" // NVML's GPU recovery action; Recovery says which, Code is NVML's value
	HealthRemap    HealthKind = "row-remap"       // row remapping: pending (a reset applies it) or failed (service)
	HealthReplay   HealthKind = "pcie-replay"     // the PCIe replay counter, read; Code is its value (the Runtime rates it)
	HealthFabric   HealthKind = "fabric"          // the GPU fabric's state, status and health (NVLink domains); Fabric says which
	HealthReset    HealthKind = "reset"           // the GPU is being reset, or is unavailable (Action Lose), or came back (Action Recover)
	HealthVMFault  HealthKind = "vm-fault"        // AMD: a GPU VM page fault (a kernel's bad address); counted
	HealthThermal  HealthKind = "thermal"         // AMD: thermal throttling; counted
	HealthRingHang HealthKind = "ring-hang"       // AMD: a ring (queue) hung; the device is lost until a reset
)

// HealthAction is what an event means for the device.
type HealthAction int

// The actions, from least to most severe.
const (
	HealthInform  HealthAction = iota // nothing is wrong with the device: a state of the watch, or counters
	HealthCount                       // an error counted against the device, which stays in service
	HealthDegrade                     // the device works but needs attention soon (a pending remap, a replay storm, a drain)
	HealthLose                        // the device is unusable until a reset or service
	// HealthRecover: the driver says the device is usable again (the
	// recovery action back to none after a reset, AMD's post-reset event).
	// It clears the verdict that Kind set; a process that used the device
	// before still restarts to use it again.
	HealthRecover
)

// RecoveryAction is what the driver says a GPU needs, as NVML's GPU
// recovery action reads (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), mapped to
// what an operator does.
type RecoveryAction int

// The recovery actions.
const (
	RecoveryUnknown    RecoveryAction = iota // the driver cannot say
	RecoveryNone                             // nothing: the GPU is fine
	RecoveryResetGPU                         // reset the GPU (NVML's GPU reset, and drain and reset)
	RecoveryRebootNode                       // reboot the node
	RecoveryDrain                            // drain the GPU's work (NVML's drain peer-to-peer)
	RecoveryService                          // service: the GPU (or its memory) must be replaced, or its domain recovered
)

// String is the action's name: "none", "reset-gpu", "reboot-node", "drain",
// "service", "unknown".
func (a RecoveryAction) String() string {
	switch a {
	case RecoveryNone:
		return "none"
	case RecoveryResetGPU:
		return "reset-gpu"
	case RecoveryRebootNode:
		return "reboot-node"
	case RecoveryDrain:
		return "drain"
	case RecoveryService:
		return "service"
	}
	return "unknown"
}

// FabricState is a GPU's fabric registration, as NVML's
// nvmlDeviceGetGpuFabricInfoV reads it (GB200/NVL72 and other NVLink
// domains).
type FabricState struct {
	State   int    `json:"state"`          // NVML's: 0 not supported, 1 not started, 2 in progress, 3 completed
	Status  int    `json:"status"`         // the nvmlReturn_t of the registration; 0 success
	Health  uint32 `json:"health_mask"`    // the v3 health mask; 0 where v2
	Summary int    `json:"health_summary"` // the v3 health summary: 0 not supported, 1 healthy, 2 unhealthy, 3 limited capacity
	Clique  uint32 `json:"clique_id,omitempty"`
	Words   string `json:"description"` // the state in words, for a status
}

// HealthEvent is one thing a HealthWatcher saw.
type HealthEvent struct {
	Ordinal int // the Runtime's device; -1 for the whole watch
	Kind    HealthKind
	Action  HealthAction
	Code    int // the Xid, the count
	// Name is the error's name, such as "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS".
	// For HealthWatching and HealthUnwatched it names the source, where a
	// backend watches with more than one ("ras", "rocm-smi"): the device is
	// watched while any source watches it.
	Name     string
	Message  string // what happened, in words
	Hint     string // what to do about it
	Counters *HealthCounters
	Recovery RecoveryAction // for HealthRecovery, and for any event whose fix the driver names
	Fabric   *FabricState   // for HealthFabric
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
	PCIeReplays         *uint64  `json:"pcie_replays,omitempty"`          // the PCIe replay counter, since the driver loaded
	Persistence         *bool    `json:"persistence_mode,omitempty"`
	ThrottleReasons     []string `json:"throttle_reasons,omitempty"`
}
