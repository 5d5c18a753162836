package drivercodes

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/driver/healthwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The codes a health watcher must get right, with the catalog's bucket for
// each, so that a catalog update that moves one shows here.
func TestPinnedXidsGetTheirCatalogBucketAndAction(t *testing.T) {
	for _, tc := range []struct {
		code      int
		immediate string
		want      XidAction
		why       string
	}{
		{13, restartApp, XidCount, "graphics engine exception: the application's"},
		{31, restartApp, XidCount, "GPU memory page fault: the application's"},
		{43, ignoreBucket, XidCount, "the application hit a fault and must end; the GPU stays healthy"},
		{45, workflowXid45, XidCount, "preemptive cleanup after a process is torn down (Control-C, kill, another Xid)"},
		{94, restartApp, XidLose, "contained memory error: the catalog says only the application that hit it must restart, but the event cannot say which application; see XidEntry.Action"},
		{48, workflowXid48, XidLose, "double-bit ECC error: reset"},
		{63, ignoreBucket, XidIgnore, "row remapping event: no action, nothing to investigate"},
		{64, resetGPU, XidLose, "row remapping failure"},
		{74, workflowNVLink, XidLose, "NVLink error: a reset or reboot clears it"},
		{79, restartBM, XidLose, "fallen off the bus: reboot the host"},
		{95, resetGPU, XidLose, "uncontained memory error"},
		{119, resetGPU, XidLose, "GSP RPC timeout"},
		{120, resetGPU, XidLose, "GSP error"},
		{140, resetGPU, XidLose, "ECC error that escaped row remapping"},
		{149, workflowNVLink5, XidLose, "NVLink5 NETIR error: undecodable from the code alone"},
		{154, xid154Bucket, XidCount, "summary of another Xid's recovery action"},
	} {
		t.Run(fmt.Sprintf("%d", tc.code), func(t *testing.T) {
			e, ok := LookupXid(tc.code)
			require.True(t, ok, "the catalog lists %d", tc.code)
			assert.Equal(t, tc.immediate, e.Immediate, tc.why)
			assert.Equal(t, tc.want, e.Action(), tc.why)
		})
	}
}

func TestFallenOffTheBusEntryIsTheCatalogs(t *testing.T) {
	e, ok := LookupXid(79)
	require.True(t, ok)
	assert.Equal(t, XidEntry{
		Code:          79,
		Mnemonic:      "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
		Description:   "GPU has fallen off the bus",
		Immediate:     "RESTART_BM",
		Investigatory: "CONTACT_SUPPORT",
	}, e)
}

// knownInvestigatory are the investigatory buckets the table may use.
var knownInvestigatory = map[string]bool{
	"": true, contactSupport: true, ignoreBucket: true, updateSWFW: true,
	workflowXid48: true, workflowNVLink5: true, checkApp: true, workflowXid13: true,
	workflowXid31: true, investigateSW: true, investigateSWUser: true,
	investigateLinkSI: true, ignoreSympathetic: true, sympatheticSolo: true,
	xid137Flow: true, xid45Solo: true, informational154: true,
}

func TestEveryEntryHasAMnemonicAndAKnownBucket(t *testing.T) {
	require.Len(t, catalog, 172, "the catalog lists codes 1 to 172")
	var bucketless []int
	for i, e := range catalog {
		assert.Equal(t, i+1, e.Code, "catalog[%d] is code %d", i, i+1)
		assert.NotEmpty(t, e.Mnemonic, "code %d", e.Code)
		assert.Equal(t, strings.TrimSpace(e.Mnemonic), e.Mnemonic, "code %d", e.Code)
		assert.NotContains(t, e.Mnemonic, "\n", "code %d", e.Code)
		assert.NotEmpty(t, e.Description, "code %d", e.Code)
		assert.True(t, knownInvestigatory[e.Investigatory], "code %d: investigatory bucket %q", e.Code, e.Investigatory)
		if e.Immediate == "" {
			bucketless = append(bucketless, e.Code)
			assert.Empty(t, e.Investigatory, "code %d", e.Code)
			continue
		}
		_, known := bucketActions[e.Immediate]
		assert.True(t, known, "code %d: immediate bucket %q", e.Code, e.Immediate)
	}
	var newest []int
	for c := 162; c <= 172; c++ {
		newest = append(newest, c)
	}
	assert.Equal(t, newest, bucketless, "only the catalog's newest rows lack a bucket")
}

func TestClassifyAgreesWithLookup(t *testing.T) {
	for code := -2; code <= 300; code++ {
		e, a := ClassifyXid(code)
		assert.Equal(t, code, e.Code)
		assert.Equal(t, e.Action(), a, "code %d", code)
		if want, ok := LookupXid(code); ok {
			assert.Equal(t, want, e, "code %d", code)
			continue
		}
		assert.Equal(t, "UNKNOWN_XID", e.Mnemonic, "code %d", code)
		assert.Empty(t, e.Immediate, "code %d", code)
		assert.Empty(t, e.Investigatory, "code %d", code)
		assert.Contains(t, e.Description, XidCatalogVersion)
	}
}

func TestUnknownXidIsCountedNotLost(t *testing.T) {
	for _, code := range []int{0, -1, 173, 999, 1 << 20} {
		_, ok := LookupXid(code)
		assert.False(t, ok, "code %d", code)
		_, a := ClassifyXid(code)
		assert.Equal(t, XidCount, a, "code %d", code)
	}
}

func TestUnusedXidIsCountedNotLost(t *testing.T) {
	n := 0
	for _, e := range catalog {
		if e.Description != unusedDescription {
			continue
		}
		n++
		assert.Equal(t, XidCount, e.Action(), "code %d (%s %s)", e.Code, e.Immediate, e.Investigatory)
	}
	assert.Equal(t, 63, n, "the catalog marks 63 codes Unused")
}

func TestIgnoreOnlyWhereTheCatalogAsksNothing(t *testing.T) {
	var ignored []int
	for _, e := range catalog {
		if e.Action() == XidIgnore {
			ignored = append(ignored, e.Code)
		}
	}
	assert.Equal(t, []int{63, 106, 107}, ignored)
}

func TestActionFollowsTheBucketRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    XidEntry
		want XidAction
	}{
		{"application error", XidEntry{Immediate: restartApp}, XidCount},
		{"reset", XidEntry{Immediate: resetGPU}, XidLose},
		{"VM restart", XidEntry{Immediate: restartVM}, XidLose},
		{"host restart", XidEntry{Immediate: restartBM}, XidLose},
		{"mechanicals", XidEntry{Immediate: checkMechanicals}, XidLose},
		{"software and firmware update", XidEntry{Immediate: updateSWFW}, XidLose},
		{"ECC workflow", XidEntry{Immediate: workflowXid48}, XidLose},
		{"NVLink workflow", XidEntry{Immediate: workflowNVLink}, XidLose},
		{"NVLink5 workflow", XidEntry{Immediate: workflowNVLink5}, XidLose},
		{"support, used code", XidEntry{Description: "NVENC3 Error", Immediate: contactSupport}, XidLose},
		{"support, unused code", XidEntry{Description: unusedDescription, Immediate: contactSupport}, XidCount},
		{"ignore, investigate", XidEntry{Immediate: ignoreBucket, Investigatory: contactSupport}, XidCount},
		{"ignore, nothing to investigate", XidEntry{Immediate: ignoreBucket, Investigatory: ignoreBucket}, XidIgnore},
		{"Xid 45 workflow", XidEntry{Immediate: workflowXid45}, XidCount},
		{"Xid 154 summary", XidEntry{Immediate: xid154Bucket}, XidCount},
		{"UVM check", XidEntry{Immediate: checkUVM}, XidCount},
		{"no bucket", XidEntry{}, XidCount},
		{"a newer catalog's bucket", XidEntry{Immediate: "SOME_NEW_BUCKET"}, XidCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.e.Action())
		})
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[XidAction]string{XidCount: "count", XidLose: "lose", XidIgnore: "ignore", XidAction(7): "Action(7)"} {
		assert.Equal(t, want, a.String())
	}
}

func TestClassifyIsSafeForConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for code := 0; code <= 200; code++ {
				e, a := ClassifyXid(code)
				if e.Code != code || a != e.Action() {
					t.Errorf("ClassifyXid(%d) = %+v, %v", code, e, a)
				}
			}
		}()
	}
	wg.Wait()
}

func TestEventCarriesTheCatalogsVerdict(t *testing.T) {
	at := time.Unix(1, 0)
	for _, c := range []struct {
		code   int
		action healthwatch.Action
		hint   string
	}{
		{79, healthwatch.Lose, "out of service"},
		{13, healthwatch.Count, "counted against the device"},
		{63, healthwatch.Inform, ""},
		{9999, healthwatch.Count, "no resolution bucket"},
	} {
		ev := XidEvent(1, c.code, at)
		assert.Equal(t, healthwatch.KindXid, ev.Kind, "Xid %d", c.code)
		assert.Equal(t, c.action, ev.Action, "Xid %d", c.code)
		assert.Equal(t, c.code, ev.Code)
		assert.Equal(t, 1, ev.Ordinal)
		assert.Equal(t, at, ev.At)
		if c.hint == "" {
			assert.Empty(t, ev.Hint)
		} else {
			assert.Contains(t, ev.Hint, c.hint)
			assert.Contains(t, ev.Hint, XidCatalogVersion)
		}
	}
}

// FuzzEvent checks ClassifyXid and XidEvent on any code a driver may report:
// ClassifyXid agrees with LookupXid, and the event names the code, its catalog
// entry, and the action ClassifyXid gives.
func FuzzEvent(f *testing.F) {
	for _, c := range []int{0, 1, 13, 31, 48, 63, 79, 94, 154, 172, 173, -1, 1 << 40} {
		f.Add(c, 3)
	}
	at := time.Date(2025, 10, 29, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, code, ordinal int) {
		e, action := ClassifyXid(code)
		if listed, ok := LookupXid(code); ok && (listed != e || listed.Action() != action) {
			t.Fatalf("Xid %d: ClassifyXid says %+v, %s; LookupXid %+v, %s", code, e, action, listed, listed.Action())
		}
		if e.Code != code || e.Mnemonic == "" || e.Description == "" {
			t.Fatalf("Xid %d: %+v", code, e)
		}
		ev := XidEvent(ordinal, code, at)
		want := map[XidAction]healthwatch.Action{XidCount: healthwatch.Count, XidLose: healthwatch.Lose, XidIgnore: healthwatch.Inform}[action]
		if ev.Code != code || ev.Ordinal != ordinal || ev.Kind != healthwatch.KindXid || ev.Action != want || ev.Name != e.Mnemonic ||
			!strings.HasPrefix(ev.Message, fmt.Sprintf("Xid %d: ", code)) || !ev.At.Equal(at) {
			t.Fatalf("Xid %d (%s): %+v", code, action, ev)
		}
	})
}
