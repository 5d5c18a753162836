package childtest

import "testing"

var sink []byte

// TestAllocsPerRunStillSeesAnAllocationPerCall: the fewest of three
// measurements is what f allocates, not zero.
func TestAllocsPerRunStillSeesAnAllocationPerCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
		want float64
	}{
		{"one allocation a call", func() { sink = make([]byte, 64) }, 1},
		{"two allocations a call", func() { sink = make([]byte, 64); sink = make([]byte, 128) }, 2},
		{"nothing", func() {}, 0},
	} {
		if got := AllocsPerRun(100, tc.f); got != tc.want {
			t.Errorf("AllocsPerRun of %s = %v, want %v", tc.name, got, tc.want)
		}
	}
}
