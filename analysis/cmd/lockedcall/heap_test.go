package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcState reads the collector's state as runtime/metrics exposes it.
func gcState() (cycles uint64, gogc uint64, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

// sink keeps allocations from being optimized away.
var sink []byte

// TestTheHeapStartsLargeThenCollectsAsUsual proves startHeap's contract: no
// collection while the heap is below the start size, and GOGC=100 with no
// memory limit once the first collection has run.
func TestTheHeapStartsLargeThenCollectsAsUsual(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	runtime.GC() // a clean start: what is garbage now does not count

	const size = 32 << 20
	before, _, _ := gcState()
	startHeap(size)
	// 16 MiB of garbage, half the start size: no collection.
	for range 16 << 10 {
		sink = make([]byte, 1<<10)
	}
	if cycles, _, _ := gcState(); cycles != before {
		t.Fatalf("%d collections below the start size, want none", cycles-before)
	}
	// Past the start size the heap is collected.
	for i := 0; ; i++ {
		sink = make([]byte, 1<<10)
		if cycles, _, _ := gcState(); cycles != before {
			break
		}
		if i > 1<<20 { // 1 GiB allocated
			t.Fatal("no collection after 1 GiB of garbage")
		}
	}
	// The first collection hands the heap back to GOGC=100, without limit.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, gogc, limit := gcState()
		if gogc == 100 && limit == math.MaxInt64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first collection GOGC is %d and the memory limit %d, want 100 and none", gogc, limit)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTheEnvironmentsGCSettingsWin proves that startHeap changes nothing
// where GOGC or GOMEMLIMIT is set.
func TestTheEnvironmentsGCSettingsWin(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, env := range []struct{ name, value string }{{"GOGC", "150"}, {"GOMEMLIMIT", "1GiB"}} {
		t.Run(env.name, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env.name, env.value)
			_, gogc, limit := gcState()
			startHeap(32 << 20)
			if _, g, l := gcState(); g != gogc || l != limit {
				t.Errorf("with %s=%s, GOGC %d → %d and the memory limit %d → %d; want no change", env.name, env.value, gogc, g, limit, l)
			}
		})
	}
}
