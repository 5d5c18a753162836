package kfd

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
		got, err := ParseTarget(tc.name)
		assert.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.name[:len(TargetName(got))], TargetName(got), tc.name)
	}
	for _, bad := range []string{"", "sm_90", "gfx", "gfx9z", "gfxab0"} {
		_, err := ParseTarget(bad)
		assert.Error(t, err, bad)
	}
}
