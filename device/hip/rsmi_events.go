//go:build linux && cgo && !nohip

package hip

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

// smiRelease is what rsmi_version_get reports: the library's own version,
// not ROCm's (ROCm 6.1.2 ships 7.2.0; a build from a source tarball without
// git tags, such as Debian 12's 5.2.3, reports 1.0.0).
type smiRelease struct {
	Major, Minor, Patch int
	Build               string
}

func (v smiRelease) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func (v smiRelease) atLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// smiLayout is how one release lays out and numbers its event notifications
// (rsmi_evt_notification_data_t: uint32_t dv_ind, a 4-byte enum, then a char
// message of msgSize bytes) and which event numbers the watch asks for.
type smiLayout struct {
	name     string
	msgSize  int
	ringHang bool // event 5 is RSMI_EVT_NOTIF_RING_HANG (else it is the kernel's migrate-start, or nothing)
}

// The layouts, from rocm_smi_lib's include/rocm_smi/rocm_smi.h and
// kfd_ioctl.h. Up to library 7.1 (ROCm 6.1.1) the events are VM fault 1,
// thermal throttle 2, GPU pre-reset 3 and post-reset 4, in a 72-byte struct.
// Library 7.2 (ROCm 6.1.2) added ring hang 5, same struct. A change of
// 2024-11-20 ("Fixed reset event issues") took the kernel's KFD_SMI_EVENT_*
// numbering (5 is migrate-start; the kernel has no ring hang) and its 96-byte
// message (a 104-byte struct); it landed after ROCm 6.3 branched, so the
// first library with it is 7.5 (ROCm 6.4). Events 1 to 4 keep their numbers
// in every layout.
var (
	layoutLegacy   = smiLayout{name: "ROCm SMI before 7.2 (ROCm 6.1.1 and older, Debian 12's 5.2.3): 64-byte message, no ring hang", msgSize: 64}
	layoutRingHang = smiLayout{name: "ROCm SMI 7.2 to 7.4 (ROCm 6.1.2 to 6.3): 64-byte message, ring hang 5", msgSize: 64, ringHang: true}
	layoutKernel   = smiLayout{name: "ROCm SMI 7.5 and later (ROCm 6.4 on): the kernel's KFD numbering, 96-byte message", msgSize: 96}
)

// maxEntrySize is the largest layout's entry: the event buffer is sized by
// it whatever the version says, so that a library misjudged writes inside it.
const maxEntrySize = 8 + 96

// layoutFor is the layout of a library that reports v. It decides by the
// version alone, never by looking at what arrives: a 72-byte entry read as
// 104 bytes, or the reverse, decodes to plausible garbage.
func layoutFor(v smiRelease) smiLayout {
	switch {
	case v.atLeast(7, 5):
		return layoutKernel
	case v.atLeast(7, 2):
		return layoutRingHang
	}
	return layoutLegacy
}

func (l smiLayout) entrySize() int { return 8 + l.msgSize }

// mask is the events the watch asks for (RSMI_EVENT_MASK_FROM_INDEX).
func (l smiLayout) mask() uint64 {
	m := uint64(1)<<(smiVMFault-1) | 1<<(smiThermal-1) | 1<<(smiPreReset-1) | 1<<(smiPostReset-1)
	if l.ringHang {
		m |= 1 << (smiRingHang - 1)
	}
	return m
}

// ROCm SMI's event numbers.
const (
	smiVMFault   = 1
	smiThermal   = 2
	smiPreReset  = 3
	smiPostReset = 4
	smiRingHang  = 5 // in layoutRingHang only
)

// smiEvent is one decoded notification.
type smiEvent struct {
	index   uint32 // ROCm SMI's device index
	event   uint32
	message string
}

// decode reads n entries of l's layout from raw, never past raw's end nor
// past a message's field, whether or not it holds a NUL, whatever n the
// library reported. A message is made text fit for a status, a log line and
// a Kubernetes condition: invalid UTF-8 reads as "?", a control character as
// a blank.
func (l smiLayout) decode(raw []byte, n int) []smiEvent {
	size := l.entrySize()
	n = min(max(n, 0), len(raw)/size)
	out := make([]smiEvent, 0, n)
	for i := range n {
		e := raw[i*size : (i+1)*size]
		msg := e[8:]
		if j := bytes.IndexByte(msg, 0); j >= 0 {
			msg = msg[:j]
		}
		out = append(out, smiEvent{index: binary.NativeEndian.Uint32(e[0:4]), event: binary.NativeEndian.Uint32(e[4:8]),
			message: printable(msg)})
	}
	return out
}

// printable is msg as text: invalid UTF-8 as "?", each control character as
// a blank, blanks trimmed. It never lengthens msg.
func printable(msg []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(msg), "?"))
	return strings.TrimSpace(s)
}

// healthEvent is what notification e means for device ordinal, under l;
// ok is false for an event the watch did not ask for.
func (l smiLayout) healthEvent(ordinal int, e smiEvent) (ev healthwatch.Event, ok bool) {
	ev = healthwatch.Event{Ordinal: ordinal, Code: int(e.event), At: time.Now()}
	said := ""
	if e.message != "" {
		said = " (ROCm SMI: " + e.message + ")"
	}
	switch {
	case e.event == smiVMFault:
		ev.Kind, ev.Action, ev.Name = healthwatch.KindVMFault, healthwatch.Count, "RSMI_EVT_NOTIF_VMFAULT"
		ev.Message = "a GPU VM page fault: a kernel used an address it does not own" + said
		ev.Hint = "the application's bug, not the GPU's: the process that faulted is broken; the device stays in service"
	case e.event == smiThermal:
		ev.Kind, ev.Action, ev.Name = healthwatch.KindThermal, healthwatch.Count, "RSMI_EVT_NOTIF_THERMAL_THROTTLE"
		ev.Message = "the GPU throttled its clocks to cool down" + said
		ev.Hint = "check the node's cooling and the GPU's fans; work runs slower while it throttles"
	case e.event == smiPreReset:
		ev.Kind, ev.Action, ev.Name = healthwatch.KindReset, healthwatch.Lose, "RSMI_EVT_NOTIF_GPU_PRE_RESET"
		ev.Message = "a GPU reset is in progress: the driver is resetting the GPU" + said
		ev.Hint = "wait for the reset to finish (the post-reset event); every process that used the GPU must restart"
	case e.event == smiPostReset:
		ev.Kind, ev.Action, ev.Name = healthwatch.KindReset, healthwatch.Recover, "RSMI_EVT_NOTIF_GPU_POST_RESET"
		ev.Message = "the GPU's reset is done: the driver says it is usable again" + said
		ev.Hint = "restart the processes that used the GPU before the reset"
	case e.event == smiRingHang && l.ringHang:
		ev.Kind, ev.Action, ev.Name = healthwatch.KindRingHang, healthwatch.Lose, "RSMI_EVT_NOTIF_RING_HANG"
		ev.Message = "a ring (a GPU queue) hung: the GPU stopped taking work" + said
		ev.Hint = "reset the GPU (amd-smi reset --gpureset, or reboot), then restart the process; the driver's own reset shows as a reset event"
	default:
		return ev, false
	}
	return ev, true
}
