//go:build linux && cgo

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/docnames"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/require"
)

// bringUpRecord is the last recorded run of BenchmarkBringUp, which the
// package doc (doc.go) quotes. Record a run with:
//
//	go test -run '^$' -bench BringUp -benchtime 20x ./examples/server | tee examples/server/testdata/bringup-bench.txt
//
// then run TestThePackageDocQuotesTheRecordedBringUpRun, which prints the
// list to paste into doc.go's section "What the preflight costs".
const bringUpRecord = "testdata/bringup-bench.txt"

// fakeInit is the fake libcuda's cuInit in the benchmark: the preflight runs
// it twice, in the child and in the server.
const fakeInit = 200 * time.Millisecond

// baseline is another build of this server (of an older commit, say) to
// measure beside this one, in the same run: its pairs of starts alternate
// with this build's, and its figures are reported with a "-baseline" unit.
var baseline = flag.String("bringup.baseline", "", "a server binary to measure beside this build, pair by pair")

// What the preflight costs, and how soon a GPU that recovers is served,
// measured over the fake libcuda whose cuInit takes 200 ms, side by side in
// one run (the package doc quotes the figures of the run recorded in
// bringUpRecord):
//
//	go test -run '^$' -bench BringUp -benchtime 20x ./examples/server
//
// Each iteration of "in-process and with the preflight" starts the server
// three times: without the preflight, with it cold (-preflight-prestart=false)
// and with its child pre-started, each iteration from the next of them. It probes
// readiness once, 100 ms after the server listens, to start the
// initialization, and then every millisecond from the least time the fake's
// inits take, until it is 200. Time to ready is from that first probe to
// the first 200. The preflight's cost is, for each pair, with
// minus without minus the child's own 200 ms init; pairs cancel the load
// of the machine that drifts while a run goes on. Every figure is the
// median over the iterations, as a mean would carry one slow start.
// With -args -bringup.baseline=BINARY each iteration also measures a pair
// of that binary, interleaved.
func BenchmarkBringUp(b *testing.B) {
	lib := fakedriver.Build(b, fakedriver.CUDA)
	bins := []string{childtest.Binary(b)} // built before any timing
	if *baseline != "" {
		bins = append(bins, *baseline)
	}
	env := []string{"GPUINIT_CUDA_LIBRARY=" + lib, "GPUINIT_FAKE_CUDA_INIT_DELAY_MS=" + strconv.Itoa(int(fakeInit.Milliseconds())),
		"GPUINIT_PREFLIGHT="}
	b.Run("in-process and with the preflight", func(b *testing.B) {
		// The modes, by the flags that set them. A baseline, an older build,
		// may not know -preflight-prestart: it runs the first two, its
		// preflight cold as it always was.
		modes := []struct {
			unit  string
			floor time.Duration // the fake's inits in this mode
			args  []string
		}{
			{"in-process", fakeInit, []string{"-preflight", "0"}},
			{"with-preflight-cold", 2 * fakeInit, []string{"-preflight", "30s", "-preflight-prestart=false"}},
			{"with-preflight", 2 * fakeInit, []string{"-preflight", "30s"}},
		}
		took := make([]map[string][]time.Duration, len(bins))
		for k := range bins {
			took[k] = map[string][]time.Duration{}
		}
		i := 0
		for b.Loop() {
			for k, bin := range bins {
				took[k]["start-and-exit"] = append(took[k]["start-and-exit"], startAndExit(b, bin))
				once := map[string]time.Duration{}
				for j := range modes { // each iteration starts with the next mode: drift falls out
					m := modes[(i+j)%len(modes)]
					args := m.args
					if k > 0 {
						if m.unit == "with-preflight" {
							continue
						}
						args = args[:2]
					}
					once[m.unit] = timeToReady(b, bin, env, m.floor, append([]string{"-backend", "cuda"}, args...)...)
					took[k][m.unit] = append(took[k][m.unit], once[m.unit])
				}
				for _, with := range []string{"with-preflight-cold", "with-preflight"} {
					if d, ok := once[with]; ok {
						cost := "preflight-cost" + strings.TrimPrefix(with, "with-preflight")
						took[k][cost] = append(took[k][cost], d-once["in-process"]-fakeInit)
					}
				}
			}
			i++
		}
		for k := range bins {
			suffix := []string{"", "-baseline"}[k]
			for unit, ds := range took[k] {
				b.ReportMetric(medianMs(ds), "ms-"+unit+suffix)
			}
		}
	})
	b.Run("ready after the fake recovers", func(b *testing.B) {
		// The fake answers 802 to the first init of each run: the next
		// attempt comes a backoff later (1 s), and ms-after-backoff is
		// from that attempt's scheduled start to readiness.
		var after []time.Duration
		for b.Loop() {
			counter := filepath.Join(b.TempDir(), "inits")
			after = append(after, readyAfterBackoff(b, append(env[:1:1], "GPUINIT_FAKE_CUDA_INIT=802",
				"GPUINIT_FAKE_CUDA_INIT_FAIL_TIMES=1", "GPUINIT_FAKE_CUDA_INIT_FAIL_FILE="+counter, "GPUINIT_PREFLIGHT=")))
		}
		b.ReportMetric(medianMs(after), "ms-after-backoff")
	})
}

// startAndExit runs bin -h, which starts the Go runtime, runs every package
// init and exits: the least any child of that binary costs.
func startAndExit(b *testing.B, bin string) time.Duration {
	b.Helper()
	start := time.Now()
	// An older baseline's -h exits 1: only a start that failed counts.
	var exit *exec.ExitError
	if out, err := exec.Command(bin, "-h").CombinedOutput(); err != nil && !errors.As(err, &exit) {
		b.Fatalf("%s -h: %v\n%s", bin, err, out)
	}
	return time.Since(start)
}

// medianMs is the median of ds in milliseconds, to the microsecond.
func medianMs(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// firstProbe is when the benchmark first probes a server it started, after
// the server listens. An orchestrator's first probe comes later still (a
// period of seconds); a server's first request, too.
const firstProbe = 100 * time.Millisecond

// timeToReady starts the server binary bin and returns how long readiness
// took to be 200 from its first probe, which starts the initialization:
// the initialization's own time, as a first request would wait for it. It
// probes firstProbe after the server listens. The initialization cannot end
// before floor (the fake's inits): it checks once before that, that it had
// not started earlier, and probes again only from floor, each millisecond: a probe loop of its own through the child's start would take
// CPU from it on a small machine, which no orchestrator's probes do.
func timeToReady(b *testing.B, bin string, env []string, floor time.Duration, args ...string) time.Duration {
	b.Helper()
	url, cmd, _ := startBinary(b, bin, env, args...)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := func() bool {
		resp, err := http.Get(url + health.ReadyPath)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	time.Sleep(firstProbe)
	start := time.Now()
	if ready() {
		b.Fatal("ready at the first probe: the initialization had started before it")
	}
	// An initialization started before the first probe, as the server
	// listened, would be ready by now.
	early := floor - firstProbe/2
	time.Sleep(time.Until(start.Add(early)))
	if ready() {
		b.Fatalf("ready within %s of the first probe, though the fake's inits take %s", early, floor)
	}
	time.Sleep(time.Until(start.Add(floor)))
	for !ready() {
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// readyAfterBackoff starts the server over a fake that fails once, and
// returns how long after the retry's scheduled start readiness was 200.
func readyAfterBackoff(b *testing.B, env []string) time.Duration {
	b.Helper()
	url, cmd := startServer(b, env, "-backend", "cuda")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var next time.Time
	for {
		resp, err := http.Get(url + health.StatusPath)
		if err != nil {
			b.Fatal(err)
		}
		var st health.Status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if st.BringUp != nil && st.BringUp.NextAttempt != nil {
			next = *st.BringUp.NextAttempt
		}
		if st.Ready {
			if next.IsZero() {
				b.Fatal("ready without a retry: the fake did not fail once")
			}
			return time.Since(next)
		}
		time.Sleep(time.Millisecond)
	}
}

// benchLine is one result line of go test -bench: the benchmark, then value
// and unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// recordedBringUp reads the figures of the recorded run: each metric's
// value by its unit, and the run's cpu line.
func recordedBringUp(t *testing.T) (metrics map[string]float64, cpu string) {
	t.Helper()
	f, err := os.Open(bringUpRecord)
	require.NoError(t, err)
	defer f.Close()
	metrics = map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if c, ok := strings.CutPrefix(sc.Text(), "cpu: "); ok {
			cpu = strings.TrimSpace(c)
		}
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasPrefix(m[1], "BenchmarkBringUp/") {
			continue
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			require.NoError(t, err, "%s", sc.Text())
			metrics[fields[i+1]] = v
		}
	}
	require.NoError(t, sc.Err())
	return metrics, cpu
}

// bringUpList renders the recorded run's figures as the package doc
// (doc.go) lists them.
func bringUpList(t *testing.T) string {
	t.Helper()
	metrics, cpu := recordedBringUp(t)
	var items []string
	for _, row := range []struct{ what, unit string }{
		{"in-process only", "ms-in-process"},
		{"with the preflight", "ms-with-preflight"},
		{"the preflight's cost beyond the child's own 200 ms init, pair by pair", "ms-preflight-cost"},
		{"with the child started cold at the first probe, not at UsePreflight", "ms-with-preflight-cold"},
		{"its cost, pair by pair", "ms-preflight-cost-cold"},
		{"of which the least: the server's binary run with -h, from its start to its exit", "ms-start-and-exit"},
		{"after a not-yet driver recovers, ready after the retry's scheduled start", "ms-after-backoff"},
	} {
		v, ok := metrics[row.unit]
		require.True(t, ok, "%s has no %s", bringUpRecord, row.unit)
		items = append(items, fmt.Sprintf("%s: %.1f ms", row.what, v))
	}
	return "Time to ready, the medians of the recorded run (" + cpu + "):\n" + docnames.List(items, 100)
}

// TestThePackageDocQuotesTheRecordedBringUpRun: the package doc's figures of
// the preflight's cost are those of the run recorded in bringUpRecord, which
// the benchmark's command writes. A figure edited by hand, or a run
// recorded without the doc following, fails it.
func TestThePackageDocQuotesTheRecordedBringUpRun(t *testing.T) {
	doc, err := docnames.PackageDoc("doc.go")
	require.NoError(t, err)
	if list := bringUpList(t); !strings.Contains(doc, list) {
		pasted := "// " + strings.ReplaceAll(strings.TrimSuffix(list, "\n"), "\n", "\n// ")
		t.Errorf("doc.go does not quote the bring-up run recorded in %s; paste this in:\n\n%s", bringUpRecord, pasted)
	}
}
