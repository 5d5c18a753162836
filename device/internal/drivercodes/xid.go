package drivercodes

import "strconv"

// XidCatalogVersion names the edition of NVIDIA's Xid catalog that the table
// holds: "Analyzing Xid Errors with the Xid Catalog", part of NVIDIA's "XID
// Errors" guide,
// https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, and
// the spreadsheet it links (Xid-Catalog.xlsx, sheet "Xids"). The catalog has no version number of its own; this edition lists
// codes 1 to 172 and its newest rows name GPU driver R575 (CUDA 12.9).
//
// The catalog covers Ampere and newer GPUs. It lists every code, Volta-era
// ones included, but marks those no longer raised on Ampere and newer
// "Unused"; their older meanings are on NVIDIA's archived page for Volta and
// older GPUs, which has no resolution buckets and is not transcribed here.
// The table was checked row by row against a transcription of the
// spreadsheet made on 2025-10-29, and its rows for the codes a watcher most
// meets against a later copy of the page.
const XidCatalogVersion = "2025-10 (Xid 1-172, R575)"

// XidAction is what an Xid asks of a server that serves on the GPU.
type XidAction int

// The actions. XidCount is the zero value.
const (
	XidCount  XidAction = iota // an application's error, or one that clears: counted against the device, which stays ready
	XidLose                    // the GPU needs a reset, a reboot, or service: the device is lost for this process
	XidIgnore                  // informational: not even counted
)

// String returns "count", "lose" or "ignore", or "Action(n)" for any other
// value.
func (a XidAction) String() string {
	switch a {
	case XidCount:
		return "count"
	case XidLose:
		return "lose"
	case XidIgnore:
		return "ignore"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// XidEntry is one row of the catalog's "Xids" sheet.
type XidEntry struct {
	Code          int
	Mnemonic      string // the catalog's, e.g. "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
	Description   string // e.g. "GPU has fallen off the bus"; "Unused" for a code no longer raised on Ampere and newer
	Immediate     string // the catalog's immediate resolution bucket, e.g. "RESET_GPU"; "" where it gives none
	Investigatory string // the catalog's investigatory bucket, or ""
}

// The catalog's immediate resolution buckets ("Resolution Bucket (Immediate
// Action)"), as its "Fault Resolution Buckets" sheet defines them.
const (
	restartApp       = "RESTART_APP"          // restart the application; no reset or reboot needed
	ignoreBucket     = "IGNORE"               // no action required
	workflowXid45    = "WORKFLOW_XID_45"      // solo: restart the fabric manager; else follow the other Xid
	xid154Bucket     = "XID_154"              // follow the recovery action that Xid 154 reports
	checkUVM         = "CHECK_UVM"            // reset the GPU if UVM or vGPU is in use, else ignore
	resetGPU         = "RESET_GPU"            // reset the GPU
	restartVM        = "RESTART_VM"           // restart the VM that owns the GPU
	restartBM        = "RESTART_BM"           // restart the bare-metal host
	checkMechanicals = "CHECK_MECHANICALS"    // check the seating and connections of the device
	updateSWFW       = "UPDATE_SWFW"          // update the driver and firmware
	contactSupport   = "CONTACT_SUPPORT"      // contact support
	workflowXid48    = "WORKFLOW_XID_48"      // an uncorrectable ECC error: reset the GPU, drain first if 63 or 64 came with it
	workflowNVLink   = "WORKFLOW_NVLINK_ERR"  // decode the message's registers; the catalog says a reset or reboot clears it
	workflowNVLink5  = "WORKFLOW_NVLINK5_ERR" // decode the message's IntrInfo and error status (Xids 144-150)
)

// The catalog's investigatory buckets that the table uses, where they are not
// immediate buckets too.
const (
	checkApp          = "CHECK_APP/CUDA"
	workflowXid13     = "WORKFLOW_XID_13"
	workflowXid31     = "WORKFLOW_XID_31"
	investigateSW     = "INVESTIGATE_SW"
	investigateSWUser = "INVESTIGATE_SW_USER"
	investigateLinkSI = "INVESTIGATE_LINK_SI"
	ignoreSympathetic = "IGNORE (sympathetic)"
	sympatheticSolo   = "SYMPATHETIC_REPORT_SOLO"
	xid137Flow        = "XID_137_FLOW"
	xid45Solo         = "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)"
	informational154  = "N/A Informational only regarding another Xid"
)

// unusedDescription is the catalog's description of a code no longer raised
// on Ampere and newer GPUs.
const unusedDescription = "Unused"

// bucketActions maps each immediate bucket to its action, by the rules at
// XidEntry.Action, which refines two of them.
var bucketActions = map[string]XidAction{
	restartApp:       XidCount,
	ignoreBucket:     XidCount,
	workflowXid45:    XidCount,
	xid154Bucket:     XidCount,
	checkUVM:         XidCount,
	resetGPU:         XidLose,
	restartVM:        XidLose,
	restartBM:        XidLose,
	checkMechanicals: XidLose,
	updateSWFW:       XidLose,
	contactSupport:   XidLose,
	workflowXid48:    XidLose,
	workflowNVLink:   XidLose,
	workflowNVLink5:  XidLose,
}

// Action returns what e asks of a server on the GPU. It follows e's immediate
// bucket, refined by its investigatory bucket (for IGNORE) and by whether the
// code is unused (for CONTACT_SUPPORT):
//
//   - RESTART_APP is an application's error: XidCount. The GPU serves on; a
//     server whose own context took the error sees it as a sticky driver
//     error on its next call.
//   - RESET_GPU, RESTART_VM and RESTART_BM recover only by a reset or a
//     reboot, CHECK_MECHANICALS (seating, power) and UPDATE_SWFW (driver and
//     firmware) only by service: XidLose.
//   - WORKFLOW_XID_48 (an uncorrectable ECC error) ends in a reset either
//     way: XidLose. WORKFLOW_NVLINK_ERR and WORKFLOW_NVLINK5_ERR tell the fatal
//     from the benign by registers in the Xid's message, which an NVML event
//     does not carry; the catalog says Xid 74 needs a reset or reboot to
//     clear, and a GPU- or link-fatal one of 144-150 leaves the GPU in a
//     "reset required" state: XidLose, which over-reports their benign subcodes.
//   - CONTACT_SUPPORT: XidLose, but XidCount for a code the catalog marks "Unused",
//     which should not be raised at all on Ampere and newer: like an unknown
//     code, it is counted rather than trusted to take a GPU out of service.
//   - IGNORE: XidCount, and XidIgnore only when the investigatory bucket is IGNORE
//     too. An IGNORE Xid needs no recovery, but most still ask for
//     investigation if they recur (43, an application's fault; 92, a high
//     single-bit ECC rate; 157, a failed resource retirement), which a count
//     shows; where the catalog asks for nothing at all (63, 106, 107) it is
//     not counted.
//   - WORKFLOW_XID_45 (a process torn down after its own or another Xid: a
//     Control-C or a kill raises it too), XID_154 (a summary that always
//     comes with the Xid it summarizes) and CHECK_UVM (reset only where UVM or
//     vGPU is in use; its one Xid, 159, is a sympathetic C2C error) defer to
//     the other Xid or to state this package cannot see: XidCount.
//   - No bucket (the catalog's newest rows, 162-172, give prose only) and an
//     unknown bucket: XidCount.
//
// One exception is made to the buckets: 94, a contained ECC error, loses the
// device as 95 (uncontained) does, though the catalog buckets it RESTART_APP
// because other applications on the GPU are unaffected. The event does not
// say which process's memory the error hit, and a server whose context it
// was cannot use that context again, nor learn of it until its next call
// fails: taking the device out of service at once is the safe reading.
//
// The watcher sees only the code: where the catalog's action hangs on the
// rest of the Xid's message or on other Xids, these rules take the reading
// that the code alone supports.
func (e XidEntry) Action() XidAction {
	if alwaysLose[e.Code] {
		return XidLose
	}
	switch e.Immediate {
	case ignoreBucket:
		if e.Investigatory == ignoreBucket {
			return XidIgnore
		}
	case contactSupport:
		if e.Description == unusedDescription {
			return XidCount
		}
	}
	if a, ok := bucketActions[e.Immediate]; ok {
		return a
	}
	return XidCount
}

// LookupXid returns the catalog's entry for code, and whether it lists code.
func LookupXid(code int) (XidEntry, bool) {
	if code < 1 || code > len(catalog) {
		return XidEntry{}, false
	}
	return catalog[code-1], true
}

// unknownMnemonic is the Mnemonic of the entry ClassifyXid makes up for a code
// the catalog does not list.
const unknownMnemonic = "UNKNOWN_XID"

// ClassifyXid returns the entry and action for any code. A code the catalog
// does not list (a newer driver's, say) gets a synthetic entry, Mnemonic
// "UNKNOWN_XID" and no buckets, and XidCount: it is counted against the device,
// which stays ready, because a guess should not take a GPU out of service. An
// Xid that truly breaks the GPU also fails the server's own driver calls or
// its readiness canary, and those lose the device. ClassifyXid(code) agrees with
// LookupXid(code) and XidEntry.Action wherever LookupXid finds the code.
func ClassifyXid(code int) (XidEntry, XidAction) {
	if e, ok := LookupXid(code); ok {
		return e, e.Action()
	}
	e := XidEntry{
		Code:        code,
		Mnemonic:    unknownMnemonic,
		Description: "not in the Xid catalog " + XidCatalogVersion,
	}
	return e, e.Action()
}

// alwaysLose are the codes that lose the device whatever their bucket; see
// XidEntry.Action.
var alwaysLose = map[int]bool{94: true}
