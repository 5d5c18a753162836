package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTargetNameIsArchOfTheVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		want    string
	}{
		{"stepping 10 is hex a", 90010, "gfx90a"},
		{"stepping 12 is hex c (an APU)", 90012, "gfx90c"},
		{"RDNA3 two-digit major", 110001, "gfx1101"},
		{"minor 4 is the middle digit", 90402, "gfx942"},
		{"RDNA2", 100300, "gfx1030"},
		{"RDNA3.5 APU", 110501, "gfx1151"},
		{"RDNA4", 120001, "gfx1201"},
		{"CDNA4", 90500, "gfx950"},
		{"zero names no target", 0, ""},
		{"negative names no target", -90010, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, GfxTargetName(tc.version))
			if tc.version > 0 {
				assert.Equal(t, GfxArch(tc.version), GfxTargetName(tc.version), "GfxTargetName is GfxArch")
			}
		})
	}
}

func TestFamilyIsTheGenericCodeObjectsMembers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		family  string
		generic string
	}{
		{"gfx900 is gfx9", 90000, "gfx9", "gfx9-generic"},
		{"the gfx90c APU is gfx9", 90012, "gfx9", "gfx9-generic"},
		{"gfx906 is gfx9", 90006, "gfx9", "gfx9-generic"},
		{"gfx908 is in no generic family", 90008, "gfx908", ""},
		{"gfx90a is in no generic family", 90010, "gfx90a", ""},
		{"gfx942 is gfx9.4", 90402, "gfx9.4", "gfx9-4-generic"},
		{"gfx950 is gfx9.4", 90500, "gfx9.4", "gfx9-4-generic"},
		{"RDNA1 gfx1010 is gfx10.1", 100100, "gfx10.1", "gfx10-1-generic"},
		{"RDNA2 gfx1030 is gfx10.3", 100300, "gfx10.3", "gfx10-3-generic"},
		{"RDNA2 APU gfx1036 is gfx10.3", 100306, "gfx10.3", "gfx10-3-generic"},
		{"RDNA3 gfx1100 is gfx11", 110000, "gfx11", "gfx11-generic"},
		{"the gfx1103 APU is gfx11", 110003, "gfx11", "gfx11-generic"},
		{"RDNA3.5 gfx1151 is gfx11", 110501, "gfx11", "gfx11-generic"},
		{"RDNA4 gfx1201 is gfx12", 120001, "gfx12", "gfx12-generic"},
		{"GFX8 is in no generic family", 80003, "gfx803", ""},
		{"a target newer than the table is its own family", 120500, "gfx1250", ""},
		{"no target, no family", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.family, GfxFamily(tc.version))
			assert.Equal(t, tc.generic, GenericGfxTarget(tc.version))
		})
	}
}

func TestOverrideWarningOnlyWhenTheOverrideCrossesFamilies(t *testing.T) {
	for _, tc := range []struct {
		name              string
		native, effective int
		want              []string // substrings; none means no warning
	}{
		{"no override", 110003, 110003, nil},
		{"an unknown native target", 0, 100300, nil},
		{"no effective target", 110003, 0, nil},
		{"the gfx1103 APU as gfx1100 stays in gfx11", 110003, 110000, nil},
		{"gfx1031 as gfx1030 stays in gfx10.3", 100301, 100300, nil},
		{"gfx1151 as gfx1100 stays in gfx11", 110501, 110000, nil},
		{"gfx90c as gfx900 stays in gfx9", 90012, 90000, nil},
		{"the gfx90c APU as gfx1030 crosses from gfx9 to gfx10.3", 90012, 100300,
			[]string{"run gfx90c as gfx1030", "another ISA family (gfx10.3, not gfx9)", "code objects built for gfx1030", "gfx900, gfx902", "gfx9-generic"}},
		{"RDNA1 gfx1010 as gfx1030 crosses", 100100, 100300,
			[]string{"gfx1010 as gfx1030", "(gfx10.3, not gfx10.1)", "gfx10-1-generic"}},
		{"RDNA2 as RDNA3 crosses", 100302, 110000, []string{"gfx1032 as gfx1100", "(gfx11, not gfx10.3)"}},
		{"gfx90a as gfx908 crosses between targets of no family", 90010, 90008,
			[]string{"gfx90a as gfx908", "in no family with another target", "unset the override"}},
		{"gfx942 as gfx90a crosses", 90402, 90010, []string{"gfx942 as gfx90a", "(gfx90a, not gfx9.4)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GfxOverrideWarning(tc.native, tc.effective)
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
		})
	}
}
