//go:build linux && cgo && !nohip

package hip

/*
#include <stdlib.h>
#include "rsmi_shim.h"

struct gpuinit_rsmi gpuinit_rsmi;
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/internal/loader"
)

// smiLibrary is where librocm_smi64 is looked for: each release's soname,
// newest first (ROCm 6 and 7 ship .so.7, ROCm 5 .so.5, Debian 12's 5.2.3
// .so.1), then the unversioned name, then ROCm's usual homes.
func smiLibrary() loader.Spec {
	return loader.Spec{
		Backend:  "hip",
		Names:    []string{"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5", "librocm_smi64.so.1", "librocm_smi64.so"},
		Dirs:     loader.Dirs([]string{os.Getenv("ROCM_PATH")}, "lib", "/opt/rocm/lib"),
		Env:      EnvSMILibrary,
		Hint:     "install ROCm SMI (Debian: librocm-smi64-1; ROCm: rocm-smi-lib), or set " + EnvSMILibrary,
		Identity: "rsmi_init",
	}
}

// smiSymbols are the ROCm SMI functions the watch calls, all required: one
// missing leaves the events unwatched, naming it.
var smiSymbols = []loader.Symbol{
	{Name: "rsmi_init", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_init), Required: true},
	{Name: "rsmi_shut_down", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_shut_down), Required: true},
	{Name: "rsmi_version_get", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_version_get), Required: true},
	{Name: "rsmi_num_monitor_devices", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_num_monitor_devices), Required: true},
	{Name: "rsmi_dev_pci_id_get", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_dev_pci_id_get), Required: true},
	{Name: "rsmi_status_string", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_status_string), Required: true},
	{Name: "rsmi_event_notification_init", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_event_notification_init), Required: true},
	{Name: "rsmi_event_notification_mask_set", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_event_notification_mask_set), Required: true},
	{Name: "rsmi_event_notification_get", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_event_notification_get), Required: true},
	{Name: "rsmi_event_notification_stop", Offset: unsafe.Offsetof(C.gpuinit_rsmi.rsmi_event_notification_stop), Required: true},
}

// loadSMI loads librocm_smi64 and binds smiSymbols, once per process; the
// library is never closed.
var loadSMI = sync.OnceValues(func() (loader.Library, error) {
	spec := smiLibrary()
	lib, err := loader.Load(spec)
	if err != nil {
		return lib, err
	}
	return lib, lib.Bind(spec, smiSymbols, unsafe.Pointer(&C.gpuinit_rsmi), unsafe.Sizeof(C.gpuinit_rsmi),
		"this ROCm SMI lacks the event notification API (ROCm 3.8 or later has it): upgrade ROCm SMI")
})

// The ROCm SMI calls, through rsmi_shim.h's table; each returns the raw
// rsmi_status_t. The caller brackets each with healthwatch.TrackCall.

func smiInit() int     { return int(C.gpuinit_rsmiInit()) }
func smiShutDown() int { return int(C.gpuinit_rsmiShutDown()) }

func smiVersion() (smiRelease, int) {
	var v C.gpuinit_rsmi_version_t
	r := int(C.gpuinit_rsmiVersion(&v))
	return smiRelease{Major: int(v.major), Minor: int(v.minor), Patch: int(v.patch),
		Build: loader.GoString(unsafe.Pointer(v.build), 64)}, r
}

func smiNumDevices() (int, int) {
	var n C.uint32_t
	r := C.gpuinit_rsmiNumDevices(&n)
	return int(n), int(r)
}

func smiPCIID(index uint32) (uint64, int) {
	var id C.uint64_t
	r := C.gpuinit_rsmiPCIID(C.uint32_t(index), &id)
	return uint64(id), int(r)
}

func smiEventInit(index uint32) int { return int(C.gpuinit_rsmiEventInit(C.uint32_t(index))) }
func smiEventStop(index uint32) int { return int(C.gpuinit_rsmiEventStop(C.uint32_t(index))) }

func smiEventMask(index uint32, mask uint64) int {
	return int(C.gpuinit_rsmiEventMask(C.uint32_t(index), C.uint64_t(mask)))
}

// smiEventGet waits up to ms for events into buf, a C buffer of room
// entries of the largest layout's size (so that a library of either layout
// writes inside it), and returns how many it wrote.
func smiEventGet(ms int, buf unsafe.Pointer, room int) (int, int) {
	n := C.uint32_t(room)
	r := C.gpuinit_rsmiEventGet(C.int(ms), &n, buf)
	return min(int(n), room), int(r)
}

// smiEventBuffer allocates the C buffer smiEventGet fills: room entries of
// the largest layout; free it with smiFree.
func smiEventBuffer(room int) unsafe.Pointer { return C.calloc(C.size_t(room), C.size_t(maxEntrySize)) }
func smiFree(p unsafe.Pointer)               { C.free(p) }

// smiStatusNames are rsmi_status_t's names, from rocm_smi.h (the same in
// every release that has the event API).
var smiStatusNames = []string{"RSMI_STATUS_SUCCESS", "RSMI_STATUS_INVALID_ARGS", "RSMI_STATUS_NOT_SUPPORTED",
	"RSMI_STATUS_FILE_ERROR", "RSMI_STATUS_PERMISSION", "RSMI_STATUS_OUT_OF_RESOURCES", "RSMI_STATUS_INTERNAL_EXCEPTION",
	"RSMI_STATUS_INPUT_OUT_OF_BOUNDS", "RSMI_STATUS_INIT_ERROR", "RSMI_STATUS_NOT_YET_IMPLEMENTED", "RSMI_STATUS_NOT_FOUND",
	"RSMI_STATUS_INSUFFICIENT_SIZE", "RSMI_STATUS_INTERRUPT", "RSMI_STATUS_UNEXPECTED_SIZE", "RSMI_STATUS_NO_DATA",
	"RSMI_STATUS_UNEXPECTED_DATA", "RSMI_STATUS_BUSY", "RSMI_STATUS_REFCOUNT_OVERFLOW"}

// smiStatus names an rsmi_status_t with its raw code, its name and the
// library's own description ("8 RSMI_STATUS_INIT_ERROR (An error occurred
// ...)"); 5.2.3's rsmi_status_string gives only the description for most.
func smiStatus(r int) string {
	name := "an unknown rsmi_status_t"
	if r >= 0 && r < len(smiStatusNames) {
		name = smiStatusNames[r]
	}
	var s *C.char
	if C.gpuinit_rsmiStatusString(C.rsmi_status_t(r), &s) != 0 || s == nil {
		return fmt.Sprintf("%d %s", r, name)
	}
	desc := loader.GoString(unsafe.Pointer(s), loader.MaxMessage)
	if rest, ok := strings.CutPrefix(desc, name+":"); ok {
		desc = strings.TrimSpace(rest)
	}
	return fmt.Sprintf("%d %s (%s)", r, name, desc)
}
