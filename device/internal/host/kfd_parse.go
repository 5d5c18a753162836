package host

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseGfxTarget reads a gfx target name ("gfx90a", "gfx1100", "gfx942", with or
// without ":xnack-" features) as a gfx target version (90010, 110000,
// 90402): the last character is the stepping in hex, the one before it the
// minor, a decimal digit (no target has a minor past 9, and GfxTargetName
// spells it in decimal), the rest the major in decimal. It is GfxTargetName's
// inverse.
func ParseGfxTarget(name string) (int, error) {
	s, _, _ := strings.Cut(strings.TrimSpace(name), ":")
	digits, ok := strings.CutPrefix(s, "gfx")
	if !ok || len(digits) < 3 {
		return 0, fmt.Errorf("kfd: %q is not a gfx target such as gfx90a", name)
	}
	major, err1 := strconv.Atoi(digits[:len(digits)-2])
	minor, err2 := strconv.ParseUint(digits[len(digits)-2:len(digits)-1], 10, 8)
	step, err3 := strconv.ParseUint(digits[len(digits)-1:], 16, 8)
	// The version is KFD's gfx_target_version, a 32-bit field.
	if err1 != nil || err2 != nil || err3 != nil || major <= 0 || major > (math.MaxInt32-9999)/10000 {
		return 0, fmt.Errorf("kfd: %q is not a gfx target such as gfx90a", name)
	}
	return major*10000 + int(minor)*100 + int(step), nil
}
