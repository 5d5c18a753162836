//go:build linux && cgo && !nocuda

package cuda

/*
#include <stdlib.h>
#include "nvml_shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// NVML's fabric states and health summaries (nvml.h's NVML_GPU_FABRIC_*).
const (
	fabricNotSupported = 0
	fabricCompleted    = 3
	summaryHealthy     = 1
	summaryUnhealthy   = 2
	summaryLimited     = 3
)

// readFabric reads device ordinal's fabric info (handle h) and reports it
// if it changed, or at its first read. A driver without
// nvmlDeviceGetGpuFabricInfoV, a GPU that answers NVML_ERROR_NOT_SUPPORTED
// or the state "not supported" (no NVLink fabric), and any other failure
// report nothing.
func (w *nvmlWatch) readFabric(ordinal int, h C.nvmlDevice_t) {
	end := w.call(ordinal, "nvmlDeviceGetGpuFabricInfoV")
	f := C.gpuinit_nvmlFabric(h)
	end()
	if f.r != 0 || f.state == fabricNotSupported {
		return
	}
	st := healthwatch.FabricState{State: int(f.state), Status: int(f.status), Health: uint32(f.mask), Summary: int(f.summary),
		Clique: uint32(f.clique)}
	own := fabricAction(st)
	st.Words = fabricWords(st)
	v := w.verdicts(ordinal)
	if v.fabric != nil && *v.fabric == st {
		return
	}
	// The fabric keeps the verdict of its own last state, never Recover: a
	// healthy state recovers only a degraded or lost fabric, once, and a
	// later benign change (a health mask's field read as "false", a new
	// clique) informs.
	action := own
	if own == healthwatch.Inform && v.fabric != nil && v.fabricAction >= healthwatch.Degrade {
		action = healthwatch.Recover
	}
	v.fabric, v.fabricAction = &st, own
	copied := st
	ev := healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindFabric, Action: action, Code: st.Status, Fabric: &copied,
		Message: "the GPU's fabric: " + st.Words, At: time.Now()}
	switch action {
	case healthwatch.Lose:
		ev.Hint = "the GPU cannot join its NVLink domain: check the fabric manager (nvidia-fabricmanager) and the NVSwitch trays, then reset the GPU"
	case healthwatch.Degrade:
		ev.Hint = "the GPU's NVLink domain works at limited capacity: drain its work and check the fabric manager's log"
	}
	w.report(ev)
}

// fabricAction is what a fabric state means for the device: a registration
// that completed with a failure or an unhealthy summary loses it, limited
// capacity degrades it, anything else informs.
func fabricAction(st healthwatch.FabricState) healthwatch.Action {
	switch {
	case st.State == fabricCompleted && st.Status != 0, st.Summary == summaryUnhealthy:
		return healthwatch.Lose
	case st.Summary == summaryLimited:
		return healthwatch.Degrade
	}
	return healthwatch.Inform
}

// fabricMaskFlags name the health mask's fields that say something is
// wrong (NVML_GPU_FABRIC_HEALTH_MASK_*): a shift, a width and the bad value.
var fabricMaskFlags = [...]struct {
	shift, width, bad uint32
	words             string
}{
	{0, 0x3, 1, "bandwidth degraded"},
	{2, 0x3, 1, "route recovery in progress"},
	{4, 0x3, 1, "route unhealthy"},
	{6, 0x3, 1, "access timeout recovery in progress"},
	{12, 0x3, 2, "no partition assigned"},
}

// fabricWords says a fabric state in words.
func fabricWords(st healthwatch.FabricState) string {
	words := map[int]string{1: "registration not started", 2: "registration in progress", 3: "registration completed"}[st.State]
	if words == "" {
		words = fmt.Sprintf("registration state %d", st.State)
	}
	if st.State == fabricCompleted && st.Status != 0 {
		var de *driver.DriverError
		name := ""
		if errors.As(nvmlCheck("nvmlDeviceGetGpuFabricInfoV", C.nvmlReturn_t(st.Status)), &de) {
			name = " " + de.Name
		}
		words += fmt.Sprintf(" with a failure (status %d%s)", st.Status, name)
	}
	if s := map[int]string{summaryHealthy: "healthy", summaryUnhealthy: "unhealthy", summaryLimited: "limited capacity"}[st.Summary]; s != "" {
		words += ", " + s
	}
	var flags []string
	for _, f := range fabricMaskFlags {
		if st.Health>>f.shift&f.width == f.bad {
			flags = append(flags, f.words)
		}
	}
	if c := st.Health >> 8 & 0xf; c > 1 {
		flags = append(flags, fmt.Sprintf("incorrect configuration %d", c))
	}
	if len(flags) > 0 {
		words += " (" + strings.Join(flags, ", ") + ")"
	}
	return words
}
