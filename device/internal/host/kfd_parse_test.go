package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseTargetIsTargetNamesInverse(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"gfx90a", 90010}, {"gfx1100", 110000}, {"gfx942", 90402}, {"gfx1030", 100300}, {"gfx90a:xnack-", 90010}, {"gfx1201", 120001},
	} {
		got, err := ParseGfxTarget(tc.name)
		assert.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.name[:len(GfxTargetName(got))], GfxTargetName(got), tc.name)
	}
	for _, bad := range []string{"", "sm_90", "gfx", "gfx9z", "gfxab0", "gfx1A0", "gfx100000000000000000"} {
		_, err := ParseGfxTarget(bad)
		assert.Error(t, err, bad)
	}
}

// FuzzParseTarget checks ParseGfxTarget on any name: a name it reads is a
// positive version whose GfxTargetName it reads back as the same version.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"gfx90a", "gfx1100", "gfx942", "gfx90a:xnack-", "gfx1201", "gfx", "sm_90", " gfx90c "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		v, err := ParseGfxTarget(name)
		if err != nil {
			return
		}
		canonical := GfxTargetName(v)
		back, err := ParseGfxTarget(canonical)
		if v <= 0 || err != nil || back != v {
			t.Fatalf("%q reads as %d, named %q, which reads as %d (%v)", name, v, canonical, back, err)
		}
	})
}
