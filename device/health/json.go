package health

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/gpuinit/gpuinit/device/internal/drivercodes"
	"github.com/gpuinit/gpuinit/lazy"
)

// StatusSchema names the layout of Status's JSON. Fields are only ever
// added within a version. A change of layout gets a new one.
const StatusSchema = "gpuinit-health/v1"

// Device is one device as JSON, in the layout gpuprobe's report shares.
type Device struct {
	Ordinal           int     `json:"ordinal"`
	Name              string  `json:"name"`
	Arch              string  `json:"arch"`
	TotalMemory       uint64  `json:"total_memory"`
	FreeMemory        *uint64 `json:"free_memory"` // null where not read
	UUID              string  `json:"uuid"`
	PCIBusID          string  `json:"pci_bus_id"`
	ComputeCapability string  `json:"compute_capability"` // "9.0"; empty outside CUDA
	Multiprocessors   int     `json:"multiprocessors"`
	Integrated        bool    `json:"integrated"`
	// MemorySource says where free_memory came from: nvml, driver-context,
	// amdgpu-vram, amdgpu-gtt, meminfo (the host's, for a GPU that shares
	// it) or sim. It is "" where free memory was not read.
	MemorySource         string      `json:"memory_source,omitempty"`
	PageableMemoryAccess bool        `json:"pageable_memory_access,omitempty"`
	MIG                  *driver.MIG `json:"mig,omitempty"` // parent GPU, instance ids, profile
	// NativeArch, ArchSource and ArchWarning say what an AMD override
	// (HSA_OVERRIDE_GFX_VERSION) changed, named by its variable.
	NativeArch  string `json:"native_arch,omitempty"`
	ArchSource  string `json:"arch_source,omitempty"`
	ArchWarning string `json:"arch_warning,omitempty"`
	// Health is what the driver's health watch knows of the device, read
	// at the status's moment. It is null where nothing watches it yet.
	Health *DeviceHealth `json:"health,omitempty"`
	// Canary is the device's last readiness canary (WithCanary).
	Canary *Canary `json:"canary,omitempty"`
}

// DeviceHealth is [device.DeviceHealth] as JSON, in the layout gpuprobe's
// report shares. Watched false means the device's health is unknown, never
// that it is healthy. Why then says why.
type DeviceHealth struct {
	// Verdict is the device's health in one word: healthy, degraded,
	// unhealthy or unknown. Reason says why (device.DeviceHealth.Verdict).
	// Recovery is the driver's recovery action: none, reset-gpu,
	// reboot-node, drain or service.
	Verdict     healthwatch.Verdict      `json:"verdict"`
	Reason      string                   `json:"reason,omitempty"`
	Since       *time.Time               `json:"since,omitempty"`
	Conditions  []healthwatch.Condition  `json:"conditions,omitempty"`
	Recovery    string                   `json:"recovery_action,omitempty"`
	Replays     float64                  `json:"pcie_replays_per_minute,omitempty"`
	Fabric      *healthwatch.FabricState `json:"fabric,omitempty"`
	Recovered   *time.Time               `json:"recovered,omitempty"`
	HungCall    string                   `json:"hung_call,omitempty"`
	Watched     bool                     `json:"watched"`
	Why         string                   `json:"why,omitempty"`
	Counted     map[string]int64         `json:"counted,omitempty"` // "xid 13", "ecc corrected"
	Counters    *healthwatch.Counters    `json:"counters,omitempty"`
	WatchError  string                   `json:"watch_error,omitempty"`
	WatchErrors int64                    `json:"watch_errors,omitempty"`
	Hint        string                   `json:"hint,omitempty"` // advice the counters call for
	// UnwatchedCalls counts calls that found the call watch's slots full
	// and ran without a deadline (device.DeviceHealth.UnwatchedCalls).
	UnwatchedCalls int64 `json:"unwatched_calls,omitempty"`
}

// DeviceHealthOf is h as JSON.
func DeviceHealthOf(h device.DeviceHealth) *DeviceHealth {
	out := &DeviceHealth{Verdict: h.Verdict, Reason: h.Reason, Conditions: h.Conditions,
		Replays: h.ReplaysPerMinute, Fabric: h.Fabric, HungCall: h.HungCall,
		Watched: h.Watched, Why: h.Why, Counted: h.Counted, Counters: h.Counters,
		WatchError: h.WatchError, WatchErrors: h.WatchErrors, Hint: h.Hint, UnwatchedCalls: h.UnwatchedCalls}
	if h.Recovery != healthwatch.RecoveryUnknown {
		out.Recovery = h.Recovery.String()
	}
	if !h.Since.IsZero() {
		out.Since = &h.Since
	}
	if !h.Recovered.IsZero() {
		out.Recovered = &h.Recovered
	}
	if h.Why == h.Reason {
		out.Why = "" // said once, as the reason
	}
	return out
}

// DeviceOf is d as JSON, without free memory.
func DeviceOf(d device.Info) Device {
	out := Device{Ordinal: d.Ordinal, Name: d.Name, Arch: d.Arch, TotalMemory: d.TotalMemory,
		UUID: d.UUID, PCIBusID: d.PCIBusID, Multiprocessors: d.Multiprocessors, Integrated: d.Integrated,
		PageableMemoryAccess: d.PageableMemoryAccess, MIG: d.MIG, NativeArch: d.NativeArch, ArchSource: d.ArchSource, ArchWarning: d.ArchWarning}
	if d.ComputeMajor != 0 {
		out.ComputeCapability = fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor)
	}
	return out
}

// Error is a failure as JSON, in the layout gpuprobe's report shares. It
// holds the message and a kind. The message leaves out the hint, which has
// a field of its own. Where there is a *device.DriverError inside, Error
// also holds the failing call, the raw code, its name and the hint. For
// work queued before initialization that failed, Site names the call that
// queued it. NotRun names the queued work that never ran.
type Error struct {
	Message string `json:"message"`
	// Kind names the sentinel the failure wraps: no-driver, no-device,
	// not-ready, driver-mismatch, driver-too-old, not-compiled, device-lost,
	// hang, bad-setting, invalid-device, not-supported, not-initialized.
	// gpuprobe adds interrupted and fleet-files. Kind is empty for others.
	// Class is device.ClassOf's name for an initialization failure.
	Kind   string   `json:"kind,omitempty"`
	Class  string   `json:"class,omitempty"`
	Op     string   `json:"op,omitempty"`
	Code   int      `json:"code,omitempty"`
	Name   string   `json:"name,omitempty"`
	Hint   string   `json:"hint,omitempty"`
	Detail string   `json:"detail,omitempty"` // the driver's or loader's words, what it tried
	Site   string   `json:"site,omitempty"`
	NotRun []string `json:"not_run,omitempty"`
}

// ErrorOf is err as JSON.
func ErrorOf(err error) *Error {
	out := &Error{Message: err.Error(), Class: device.ClassOf(err).String()}
	// auto's combined error is reported as its lead's. That is the kind,
	// call, code and hint of the backend that got furthest, never another's
	// advice.
	lead := err
	var nb *device.NoBackendError
	if errors.As(err, &nb) && len(nb.Tried) > 0 {
		lead = nb.Lead().Err
	}
	var de *device.DriverError
	if errors.As(lead, &de) {
		out.Op, out.Code, out.Name, out.Hint, out.Detail = de.Op, de.Code, de.Name, de.Hint, de.Detail
		// The hint is said once, in its field.
		if de.Hint != "" {
			out.Message = strings.Replace(out.Message, "; "+de.Hint, "", 1)
		}
	}
	out.Kind = drivercodes.KindOf(lead)
	var deferred *lazy.DeferredError
	var initErr *lazy.InitError
	switch {
	case errors.As(err, &deferred):
		out.Site, out.NotRun = deferred.Site, deferred.NotRun
	case errors.As(err, &initErr):
		out.NotRun = initErr.NotRun
	}
	return out
}

// Status is what the status handler serves, as JSON (StatusSchema).
type Status struct {
	Schema string `json:"schema"`
	State  string `json:"state"` // uninitialized, initializing, ready or failed
	Ready  bool   `json:"ready"`
	Live   bool   `json:"live"`
	// Reason says why the runtime is not ready, or not live; empty when both.
	Reason         string        `json:"reason,omitempty"`
	Backend        string        `json:"backend"`
	DriverVersion  int           `json:"driver_version,omitempty"`
	RuntimeVersion int           `json:"runtime_version,omitempty"`
	Devices        []Device      `json:"devices"`
	Lost           []Lost        `json:"lost,omitempty"`
	ErrorsReported map[int]int64 `json:"errors_reported,omitempty"` // non-sticky errors, by ordinal
	// FailedCalls are the calls queued before initialization that failed
	// when they ran ([device.Stats].FailedCalls). Each has the call site
	// that queued it. Their failures are their own, and the runtime is
	// ready. MoreFailedCalls counts those past the first 16.
	FailedCalls     []*Error          `json:"failed_calls,omitempty"`
	MoreFailedCalls int               `json:"more_failed_calls,omitempty"`
	Visibility      map[string]string `json:"visibility,omitempty"`
	Init            InitTimes         `json:"init"`
	Failure         *Error            `json:"failure,omitempty"`
	// PassedOver are the other backends auto tried, each with its own
	// reason. Failure is the lead one's, said once.
	PassedOver []PassedOver `json:"passed_over,omitempty"`
	// Class is the failure's class: no-gpu, not-yet or needs-operator
	// (device.ClassOf). Degraded reports a server that serves without a
	// GPU because of it (WithCPUFallback).
	Class    string   `json:"class,omitempty"`
	Degraded bool     `json:"degraded,omitempty"`
	BringUp  *BringUp `json:"bring_up,omitempty"`
	// ReadAt is when the versions and devices above were read. They are
	// read once, when initialization finished, never by a probe. AgeSeconds
	// is how long ago.
	ReadAt     *time.Time `json:"read_at,omitempty"`
	AgeSeconds float64    `json:"age_seconds,omitempty"`
	// Closed reports a runtime that was shut down.
	Closed bool `json:"closed,omitempty"`
}

// PassedOver is one backend auto tried and passed over, as JSON.
type PassedOver struct {
	Backend       string `json:"backend"`
	DriverVersion int    `json:"driver_version,omitempty"` // its driver's version before it failed
	Error         *Error `json:"error"`
}

// BringUp is [device.BringUp] as JSON. It says what the initialization does
// now, and how its preflight attempts went.
type BringUp struct {
	Phase       string     `json:"phase"` // preflight, waiting, driver, queued or done
	Since       *time.Time `json:"since,omitempty"`
	Backend     string     `json:"backend,omitempty"`
	Preflight   bool       `json:"preflight"`
	Attempts    int        `json:"attempts"`
	LastError   *Error     `json:"last_error,omitempty"`
	LastClass   string     `json:"last_class,omitempty"`
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	InProcess   *time.Time `json:"in_process,omitempty"` // when the in-process part began
}

// Lost is a lost device as JSON. Source says who saw it lost
// ([device.LossSource]). engine is the server's ReportError. deadline is a
// call hung past its deadline. xid, ecc and ras are the driver's health
// watch, and canary the readiness canary. A loss by the driver's own
// verdict is named by its health kind, such as "recovery-action".
type Lost struct {
	Ordinal int       `json:"ordinal"`
	Source  string    `json:"source"`
	Error   *Error    `json:"error"`
	At      time.Time `json:"at"`
}

// InitTimes is the initialization's timeline as JSON. While it runs,
// Running names what it runs: "init", or the call site of queued work.
// RunningSeconds says for how long. Together they show where a hang is.
type InitTimes struct {
	Started        *time.Time `json:"started,omitempty"`
	Finished       *time.Time `json:"finished,omitempty"`
	DurationMillis float64    `json:"duration_ms,omitempty"`
	Running        string     `json:"running,omitempty"`
	RunningSeconds float64    `json:"running_seconds,omitempty"`
}
