package healthwatch

import "time"

// Kind is what an Event reports.
type Kind string

// The kinds of health events.
const (
	KindWatching   Kind = "watching"    // the device's health is watched from now on
	KindUnwatched  Kind = "unwatched"   // the device cannot be watched (Message says why): its health is unknown
	KindXid        Kind = "xid"         // an Xid error; Code is the Xid
	KindECC        Kind = "ecc"         // an ECC error: corrected, or not (Action says)
	KindRAS        Kind = "ras"         // amdgpu's RAS counters rose; Code is by how much
	KindCounters   Kind = "counters"    // Counters holds the device's latest counters
	KindWatchError Kind = "watch-error" // the watch failed and will be retried; Message says why

	// The driver's own verdicts. Each is reported when it changes (and once
	// at the start, where the driver can say), never only in counters.
	KindRecovery Kind = "recovery-action" // NVML's GPU recovery action; Recovery says which, Code is NVML's value
	KindRemap    Kind = "row-remap"       // row remapping: pending (a reset applies it) or failed (service)
	KindReplay   Kind = "pcie-replay"     // the PCIe replay counter, read; Code is its value (the Runtime rates it)
	KindFabric   Kind = "fabric"          // the GPU fabric's state, status and health (NVLink domains); Fabric says which
	KindReset    Kind = "reset"           // the GPU is being reset, or is unavailable (Action Lose), or came back (Action Recover)
	KindVMFault  Kind = "vm-fault"        // AMD: a GPU VM page fault (a kernel's bad address); counted
	KindThermal  Kind = "thermal"         // AMD: thermal throttling; counted
	KindRingHang Kind = "ring-hang"       // AMD: a ring (queue) hung; the device is lost until a reset
)

// Action is what an event means for the device.
type Action int

// The actions, from least to most severe.
const (
	Inform  Action = iota // nothing is wrong with the device: a state of the watch, or counters
	Count                 // an error counted against the device, which stays in service
	Degrade               // the device works but needs attention soon (a pending remap, a replay storm, a drain)
	Lose                  // the device is unusable until a reset or service
	// Recover: the driver says the device is usable again (the
	// recovery action back to none after a reset, AMD's post-reset event).
	// It clears the verdict that Kind set; a process that used the device
	// before still restarts to use it again.
	Recover
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

// Event is one thing a HealthWatcher saw.
type Event struct {
	Ordinal int // the Runtime's device; -1 for the whole watch
	Kind    Kind
	Action  Action
	Code    int // the Xid, the count
	// Name is the error's name, such as "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS".
	// For KindWatching and KindUnwatched it names the source, where a
	// backend watches with more than one ("ras", "rocm-smi"): the device is
	// watched while any source watches it.
	Name     string
	Message  string // what happened, in words
	Hint     string // what to do about it
	Counters *Counters
	Recovery RecoveryAction // for KindRecovery, and for any event whose fix the driver names
	Fabric   *FabricState   // for KindFabric
	At       time.Time
}

// Counters are the counters a server should see about a device, as
// the driver keeps them; a field the driver cannot read is nil.
type Counters struct {
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
