package host

import (
	"fmt"
	"strings"
)

// GfxTargetName names a gfx target version as LLVM and ROCm do: 90010 is
// "gfx90a", 110001 is "gfx1101", 90402 is "gfx942". It is GfxArch, except that
// a version that names no target (zero or negative) gives "".
func GfxTargetName(target int) string {
	if target <= 0 {
		return ""
	}
	return GfxArch(target)
}

// family is one set of gfx targets that share an ISA closely enough that LLVM
// builds one generic code object for all of them.
type family struct {
	name    string // as GfxFamily reports it: "gfx10.3"
	generic string // LLVM's generic processor: "gfx10-3-generic"
	members []int  // gfx target versions
}

// families are LLVM's generic processors and their members, from the AMDGPU
// Generic Processors table of https://llvm.org/docs/AMDGPUUsage.html
// (amdgpu-generic-processor-table). gfx908, gfx90a and the GFX8 parts are in
// none of them.
var families = []family{
	{"gfx9", "gfx9-generic", []int{90000, 90002, 90004, 90006, 90009, 90012}},
	{"gfx9.4", "gfx9-4-generic", []int{90400, 90401, 90402, 90500}},
	{"gfx10.1", "gfx10-1-generic", []int{100100, 100101, 100102, 100103}},
	{"gfx10.3", "gfx10-3-generic", []int{100300, 100301, 100302, 100303, 100304, 100305, 100306}},
	{"gfx11", "gfx11-generic", []int{110000, 110001, 110002, 110003, 110500, 110501, 110502, 110503}},
	{"gfx12", "gfx12-generic", []int{120000, 120001}},
}

// familyOf returns the generic family target belongs to.
func familyOf(target int) (family, bool) {
	for _, f := range families {
		for _, m := range f.members {
			if m == target {
				return f, true
			}
		}
	}
	return family{}, false
}

// GfxFamily names the ISA family of a gfx target version: the set of targets
// LLVM covers with one generic code object. gfx900, gfx902, gfx904, gfx906,
// gfx909 and gfx90c are "gfx9"; gfx940, gfx941, gfx942 and gfx950 are
// "gfx9.4"; gfx1010–gfx1013 are "gfx10.1"; gfx1030–gfx1036 are "gfx10.3";
// gfx1100–gfx1103 and gfx1150–gfx1153 are "gfx11"; gfx1200 and gfx1201 are
// "gfx12". A target in no generic family (gfx908, gfx90a, gfx803, or one newer
// than this table) is a family of its own, named like the target, so that no
// code object is assumed to run on it unless it was built for it. A version
// that names no target gives "".
func GfxFamily(target int) string {
	if f, ok := familyOf(target); ok {
		return f.name
	}
	return GfxTargetName(target)
}

// GenericGfxTarget names LLVM's generic processor for a gfx target version, such
// as "gfx11-generic" for gfx1103: a code object built for it runs on every
// member of the family (ROCm 6.4 and later build them). It is "" for a target
// in no generic family.
func GenericGfxTarget(target int) string {
	f, _ := familyOf(target)
	return f.generic
}

// GfxOverrideWarning says why an override that makes ROCm treat a device of the
// native gfx target as the effective one is harmful, or "" when it is not: when
// there is no override (effective is native or zero) or both are in one ISA
// family.
//
// ROCm loads a kernel only from a code object built for the device's target,
// and an override changes what ROCm believes that target is, so every kernel
// the device then runs was built for the effective target's ISA. Within one
// family (gfx1103 run as gfx1100, gfx1031 as gfx1030) the encodings are the
// ones the device implements and the override is the usual way to use an
// unsupported part, though a member-specific code object may still use an
// instruction the device lacks, which only a generic code object rules out.
// Across families (gfx90c run as gfx1030, gfx1010 as gfx1030) the device
// executes another ISA's machine code: expect invalid-instruction faults,
// hangs, a lost device or wrong results.
func GfxOverrideWarning(native, effective int) string {
	if native <= 0 || effective <= 0 || native == effective {
		return ""
	}
	from, to := GfxFamily(native), GfxFamily(effective)
	if from == to {
		return ""
	}
	msg := fmt.Sprintf("the override makes ROCm run %s as %s, another ISA family (%s, not %s): "+
		"ROCm loads code objects built for %s onto it, so the device executes machine code for an ISA "+
		"it does not implement (invalid-instruction faults, hangs, a lost device or wrong results)",
		GfxTargetName(native), GfxTargetName(effective), to, from, GfxTargetName(effective))
	if f, ok := familyOf(native); ok {
		names := make([]string, len(f.members))
		for i, m := range f.members {
			names[i] = GfxTargetName(m)
		}
		return msg + fmt.Sprintf("; override to a target of its own family (%s), ship kernels built for %s, or unset the override",
			strings.Join(names, ", "), f.generic)
	}
	return msg + "; " + GfxTargetName(native) + " is in no family with another target: unset the override and use kernels built for " + GfxTargetName(native)
}
