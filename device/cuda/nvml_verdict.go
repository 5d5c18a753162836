//go:build linux && cgo && !nocuda

package cuda

/*
#include <stdlib.h>
#include "nvml_shim.h"
*/
import "C"

import (
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// nvmlVerdicts is what the watch last reported of one device's own
// verdicts, so that it reports each again only when it changes.
type nvmlVerdicts struct {
	recovery     *uint // NVML's last recovery action; nil until read
	remap        remapState
	fabric       *healthwatch.FabricState // nil until read
	fabricAction healthwatch.Action       // the last state's own action: Inform, Degrade or Lose
}

// remapState is a device's row remapping, as nvmlDeviceGetRemappedRows says.
type remapState int

const (
	remapUnread remapState = iota
	remapNone
	remapPending
	remapFailed
)

// verdicts is device ordinal's state, made at its first use.
func (w *nvmlWatch) verdicts(ordinal int) *nvmlVerdicts {
	v := w.devices[ordinal]
	if v == nil {
		v = &nvmlVerdicts{}
		w.devices[ordinal] = v
	}
	return v
}

// counterReads are the reads of one counters read, by the NVML function
// each makes (the retired pages' read calls it once per cause).
var counterReads = [...]struct {
	which C.int
	op    string
}{
	{C.GPUINIT_READ_PERSISTENCE, "nvmlDeviceGetPersistenceMode"},
	{C.GPUINIT_READ_ECC_MODE, "nvmlDeviceGetEccMode"},
	{C.GPUINIT_READ_ECC_CORRECTED, "nvmlDeviceGetTotalEccErrors"},
	{C.GPUINIT_READ_ECC_UNCORRECTED, "nvmlDeviceGetTotalEccErrors"},
	{C.GPUINIT_READ_REMAP, "nvmlDeviceGetRemappedRows"},
	{C.GPUINIT_READ_THROTTLE, "nvmlDeviceGetCurrentClocksEventReasons"},
	{C.GPUINIT_READ_RETIRED, "nvmlDeviceGetRetiredPages_v2"},
	{C.GPUINIT_READ_RETIRED_PENDING, "nvmlDeviceGetRetiredPagesPendingStatus"},
	{C.GPUINIT_READ_REPLAYS, "nvmlDeviceGetPcieReplayCounter"},
	{C.GPUINIT_READ_RECOVERY, "nvmlDeviceGetFieldValues"},
}

// read reads device ordinal's counters (handle h), each call tracked, and
// reports them, then the verdicts that changed: the recovery action, the
// row remapping, the PCIe replay counter (at every read, for the rate) and
// the fabric's state.
func (w *nvmlWatch) read(ordinal int, h C.nvmlDevice_t) {
	hc := &healthwatch.Counters{}
	remap := remapUnread
	var recovery *uint
	for _, c := range counterReads {
		end := w.call(ordinal, c.op)
		out := C.gpuinit_nvmlRead(h, c.which)
		end()
		if out.r != 0 {
			continue
		}
		a, b := uint64(out.a), uint64(out.b)
		switch c.which {
		case C.GPUINIT_READ_PERSISTENCE:
			hc.Persistence = ptr(a == 1)
		case C.GPUINIT_READ_ECC_MODE:
			hc.ECCEnabled = ptr(a == 1)
		case C.GPUINIT_READ_ECC_CORRECTED:
			hc.ECCCorrected = ptr(a)
		case C.GPUINIT_READ_ECC_UNCORRECTED:
			hc.ECCUncorrected = ptr(a)
		case C.GPUINIT_READ_REMAP:
			hc.RowRemapsPending, hc.RowRemapFailed = ptr(a != 0), ptr(b != 0)
			remap = remapNone
			if a != 0 {
				remap = remapPending
			}
			if b != 0 {
				remap = remapFailed
			}
		case C.GPUINIT_READ_THROTTLE:
			hc.ThrottleReasons = throttleReasons(a)
		case C.GPUINIT_READ_RETIRED:
			hc.RetiredPages = ptr(a)
		case C.GPUINIT_READ_RETIRED_PENDING:
			hc.RetiredPagesPending = ptr(a == 1)
		case C.GPUINIT_READ_REPLAYS:
			hc.PCIeReplays = ptr(a)
		case C.GPUINIT_READ_RECOVERY:
			recovery = ptr(uint(a))
		}
	}
	now := time.Now()
	w.report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindCounters, Counters: hc, At: now})
	if recovery != nil {
		w.recovery(ordinal, *recovery)
	}
	w.remap(ordinal, remap)
	if hc.PCIeReplays != nil {
		w.report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindReplay, Action: healthwatch.Inform, Code: int(*hc.PCIeReplays),
			Message: fmt.Sprintf("the PCIe replay counter reads %d", *hc.PCIeReplays), At: now})
	}
	w.readFabric(ordinal, h)
}

func ptr[T any](v T) *T { return &v }

// readRecovery reads device ordinal's recovery action alone, after an event
// that says it changed, and reports it if it did. A driver that cannot say
// (the field unsupported, the call missing) reports nothing: unknown.
func (w *nvmlWatch) readRecovery(ordinal int, h C.nvmlDevice_t) {
	end := w.call(ordinal, "nvmlDeviceGetFieldValues")
	out := C.gpuinit_nvmlRead(h, C.GPUINIT_READ_RECOVERY)
	end()
	if out.r == 0 {
		w.recovery(ordinal, uint(out.a))
	}
}

// recoveryActions are NVML's GPU recovery actions (nvmlDeviceGpuRecoveryAction_t).
var recoveryActions = [...]struct {
	action healthwatch.RecoveryAction
	name   string
	hint   string
}{
	{healthwatch.RecoveryNone, "NONE", ""},
	{healthwatch.RecoveryResetGPU, "GPU_RESET", "reset the GPU (nvidia-smi -r) once no process uses it, then restart the processes that used it"},
	{healthwatch.RecoveryRebootNode, "NODE_REBOOT", "reboot the node: the GPU cannot be reset alone"},
	{healthwatch.RecoveryDrain, "DRAIN_P2P", "drain the GPU's peer-to-peer work (NVLink, P2P copies) and let the driver recover it"},
	{healthwatch.RecoveryResetGPU, "DRAIN_AND_RESET", "drain the GPU's work, then reset it (nvidia-smi -r), then restart the processes that used it"},
	{healthwatch.RecoveryService, "RECOVER_IMEX_DOMAIN", "recover the GPU's IMEX domain (its NVLink partition), as NVIDIA's fabric manager documents"},
}

// recovery reports device ordinal's recovery action, raw, if it changed
// (or at its first read): a reset, a reboot or service loses the device, a
// drain degrades it, and none after something else recovers it. A value
// this backend does not know degrades it, named by its number.
func (w *nvmlWatch) recovery(ordinal int, raw uint) {
	v := w.verdicts(ordinal)
	first := v.recovery == nil
	if !first && *v.recovery == raw {
		return
	}
	v.recovery = &raw
	ev := healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindRecovery, Code: int(raw), At: time.Now(),
		Recovery: healthwatch.RecoveryUnknown, Action: healthwatch.Degrade, Name: fmt.Sprint(raw),
		Message: fmt.Sprintf("the driver's recovery action for the GPU is %d, which this gpuinit does not know", raw),
		Hint:    "see nvidia-smi -q (its recovery action) and NVIDIA's Xid catalog"}
	if raw < uint(len(recoveryActions)) {
		a := recoveryActions[raw]
		ev.Recovery, ev.Name, ev.Hint = a.action, a.name, a.hint
		ev.Message = "the driver's recovery action for the GPU is " + a.action.String() + " (NVML_GPU_RECOVERY_ACTION_" + a.name + ")"
		switch a.action {
		case healthwatch.RecoveryNone:
			ev.Action = healthwatch.Inform
			if !first {
				ev.Action = healthwatch.Recover
				ev.Message = "the driver's recovery action for the GPU is back to none: the GPU is usable again"
				ev.Hint = "restart the processes that used the GPU before to use it again"
			}
		case healthwatch.RecoveryDrain:
			ev.Action = healthwatch.Degrade
		default:
			ev.Action = healthwatch.Lose
		}
	}
	w.report(ev)
}

// remap reports device ordinal's row remapping if it changed (or at its
// first read): pending degrades the device (a reset applies it), failed
// loses it (service), and neither after one recovers it.
func (w *nvmlWatch) remap(ordinal int, s remapState) {
	v := w.verdicts(ordinal)
	if s == remapUnread || s == v.remap {
		return
	}
	first := v.remap == remapUnread
	v.remap = s
	ev := healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindRemap, At: time.Now()}
	switch s {
	case remapPending:
		ev.Action, ev.Name = healthwatch.Degrade, "pending"
		ev.Message = "a row remapping of the GPU's memory is pending"
		ev.Hint = "reset the GPU (nvidia-smi -r) when it is idle: the reset applies the remap"
	case remapFailed:
		ev.Action, ev.Name = healthwatch.Lose, "failed"
		ev.Message = "a row remapping of the GPU's memory failed: the memory has no spare rows left"
		ev.Hint = "the GPU needs service (its memory is wearing out): take it out of service and contact the vendor"
	default:
		ev.Action, ev.Name = healthwatch.Inform, "none"
		ev.Message = "no row remapping is pending or failed"
		if !first {
			ev.Action = healthwatch.Recover
			ev.Message = "no row remapping is pending or failed any more: the remap was applied"
		}
	}
	w.report(ev)
}
