//go:build linux && cgo && !nohip

package hip

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
)

const (
	smiRoom    = 16 // entries one get may return
	rsmiNoData = 14 // RSMI_STATUS_NO_DATA: the get timed out with nothing
)

// watchTiming paces the health watch. smiWait bounds one
// rsmi_event_notification_get: the watch blocks in it, using no CPU, and
// looks at its context between two; after a get that failed, it waits as
// long before the next. The RAS period is the user's (GPUINIT_RAS_PERIOD).
type watchTiming struct {
	smiWait time.Duration
}

// productionTiming is every Backend's, unless a test gave its own.
var productionTiming = watchTiming{smiWait: 500 * time.Millisecond}

// watchTiming is b's timing: productionTiming unless a test set its own.
func (b *Backend) watchTiming() watchTiming {
	if b != nil && b.timing != nil {
		return *b.timing
	}
	return productionTiming
}

// smiOwned is whether a watch of this process holds ROCm SMI's events. The
// library keeps one notification stream per device for the process, and a
// get drains every device's: two watches at once would take each other's
// events, so the second one leaves its events unwatched and says why.
var smiOwned atomic.Bool

// smiWatch is a running watch of ROCm SMI's event notifications.
type smiWatch struct {
	layout  smiLayout
	version smiRelease
	ordinal map[uint32]int // ROCm SMI's device index to the Runtime's ordinal, for the started ones
	buf     unsafe.Pointer
}

// call brackets one ROCm SMI call for the Runtime's call deadline.
func call(ctx context.Context, ordinal int, op string, f func() int) int {
	end := healthwatch.TrackCall(ctx, ordinal, op)
	defer end()
	return f()
}

// smiFailure is a ROCm SMI call's failure, in words, with its status named.
func smiFailure(ctx context.Context, op string, r int) string {
	name := ""
	call(ctx, -1, "rsmi_status_string", func() int { name = smiStatus(r); return 0 })
	return fmt.Sprintf("%s answered %s", op, name)
}

// startSMI starts ROCm SMI's event notifications for the devices whose PCI
// bus ids are busIDs (the Runtime's ordinals), and reports each device's
// events watched or unwatched, with why. It returns nil where it watches
// none, having shut ROCm SMI down again.
func startSMI(ctx context.Context, busIDs []string, report func(healthwatch.Event)) *smiWatch {
	unwatched := func(ordinals []int, why string) *smiWatch {
		for _, o := range ordinals {
			report(healthwatch.Event{Ordinal: o, Kind: healthwatch.KindUnwatched, Name: "rocm-smi", At: time.Now(),
				Message: fmt.Sprintf("hip: device %d's events (VM faults, thermal throttling, resets, ring hangs) are unknown: %s", o, why)})
		}
		return nil
	}
	all := make([]int, len(busIDs))
	for i := range all {
		all[i] = i
	}
	if _, err := loadSMI(); err != nil {
		return unwatched(all, "ROCm SMI cannot be used: "+err.Error())
	}
	if !smiOwned.CompareAndSwap(false, true) {
		return unwatched(all, "another health watch of this process holds ROCm SMI's events, which the library keeps one stream of per process")
	}
	if r := call(ctx, -1, "rsmi_init", smiInit); r != 0 {
		smiOwned.Store(false)
		return unwatched(all, "ROCm SMI could not start: "+smiFailure(ctx, "rsmi_init", r)+
			" (with no GPU or no amdgpu driver it fails so; check /dev/kfd and /sys/class/drm)")
	}
	w := &smiWatch{ordinal: map[uint32]int{}}
	fail := func(ordinals []int, why string) *smiWatch {
		w.stop(ctx)
		return unwatched(ordinals, why)
	}
	var r int
	call(ctx, -1, "rsmi_version_get", func() int { w.version, r = smiVersion(); return r })
	if r != 0 {
		return fail(all, "the library's version, which decides how its events are laid out, cannot be read: "+smiFailure(ctx, "rsmi_version_get", r))
	}
	w.layout = layoutFor(w.version)
	var n int
	call(ctx, -1, "rsmi_num_monitor_devices", func() int { n, r = smiNumDevices(); return r })
	if r != 0 || n == 0 {
		why := "ROCm SMI finds no device"
		if r != 0 {
			why = smiFailure(ctx, "rsmi_num_monitor_devices", r)
		}
		return fail(all, why)
	}
	// Match each ROCm SMI device to the HIP device with its PCI bus id
	// (domain, bus, device, function). A HIP device that none matches, or
	// that two match (a partitioned GPU, whose partitions share one bus id),
	// is left with its events unwatched, said so; a ROCm SMI device that
	// matches no HIP device (one this process does not see) is not started.
	byBus := map[string][]uint32{}
	for i := range uint32(n) {
		var id uint64
		if r := call(ctx, -1, "rsmi_dev_pci_id_get", func() int { var r int; id, r = smiPCIID(i); return r }); r != 0 {
			continue // that index is no one's: its GPU is unwatched below if it is ours
		}
		bus := fmt.Sprintf("%04x:%02x:%02x.%x", id>>32&0xffffffff, id>>8&0xff, id>>3&0x1f, id&7)
		byBus[bus] = append(byBus[bus], i)
	}
	for ordinal, bus := range busIDs {
		indexes := byBus[bus]
		why := ""
		switch {
		case len(indexes) == 0:
			why = "no ROCm SMI device has its PCI bus id " + bus
		case len(indexes) > 1:
			why = fmt.Sprintf("ROCm SMI devices %v share its PCI bus id %s (a partitioned GPU), so their events cannot be told apart", indexes, bus)
		default:
			why = w.start(ctx, ordinal, indexes[0])
		}
		if why != "" {
			unwatched([]int{ordinal}, why)
			continue
		}
		report(healthwatch.Event{Ordinal: ordinal, Kind: healthwatch.KindWatching, Name: "rocm-smi", At: time.Now(),
			Message: fmt.Sprintf("ROCm SMI %s events: %s", w.version, w.layout.name)})
	}
	if len(w.ordinal) == 0 {
		w.stop(ctx)
		return nil
	}
	w.buf = smiEventBuffer(smiRoom)
	return w
}

// start starts device index's notifications for ordinal; "" or why not.
func (w *smiWatch) start(ctx context.Context, ordinal int, index uint32) string {
	if r := call(ctx, ordinal, "rsmi_event_notification_init", func() int { return smiEventInit(index) }); r != 0 {
		return smiFailure(ctx, "rsmi_event_notification_init", r)
	}
	if r := call(ctx, ordinal, "rsmi_event_notification_mask_set", func() int { return smiEventMask(index, w.layout.mask()) }); r != 0 {
		call(ctx, ordinal, "rsmi_event_notification_stop", func() int { return smiEventStop(index) })
		return smiFailure(ctx, "rsmi_event_notification_mask_set", r)
	}
	w.ordinal[index] = ordinal
	return ""
}

// wait waits up to ms for events and reports them; a failure of the get is
// reported as a watch error, and the next wait tries again.
func (w *smiWatch) wait(ctx context.Context, ms int, report func(healthwatch.Event)) {
	var n, r int
	// The get blocks for up to ms by design: the deadline starts after it.
	end := healthwatch.TrackWait(ctx, -1, "rsmi_event_notification_get", time.Duration(ms)*time.Millisecond)
	n, r = smiEventGet(ms, w.buf, smiRoom)
	end()
	switch r {
	case 0:
	case rsmiNoData:
		return
	default:
		report(healthwatch.Event{Ordinal: -1, Kind: healthwatch.KindWatchError, At: time.Now(),
			Message: "hip: ROCm SMI's events: " + smiFailure(ctx, "rsmi_event_notification_get", r) + "; waiting again"})
		if ctx.Err() == nil {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond) // no busy loop on a get that fails at once
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		return
	}
	raw := unsafe.Slice((*byte)(w.buf), smiRoom*maxEntrySize)
	for _, e := range w.layout.decode(raw, n) {
		ordinal, ok := w.ordinal[e.index]
		ev, known := w.layout.healthEvent(ordinal, e)
		if !ok || !known {
			report(healthwatch.Event{Ordinal: -1, Kind: healthwatch.KindWatchError, At: time.Now(),
				Message: fmt.Sprintf("hip: ROCm SMI %s sent event %d for device index %d, which the watch did not ask for (read as %s); ignored: %q",
					w.version, e.event, e.index, w.layout.name, strings.ToValidUTF8(e.message, "?"))})
			continue
		}
		report(ev)
	}
}

// stop stops every device's notifications and shuts ROCm SMI down; w may be
// nil.
func (w *smiWatch) stop(ctx context.Context) {
	if w == nil {
		return
	}
	for index, ordinal := range w.ordinal {
		call(ctx, ordinal, "rsmi_event_notification_stop", func() int { return smiEventStop(index) })
	}
	call(ctx, -1, "rsmi_shut_down", smiShutDown)
	if w.buf != nil {
		smiFree(w.buf)
	}
	smiOwned.Store(false)
}
