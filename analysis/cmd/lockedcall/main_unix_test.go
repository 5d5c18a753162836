//go:build unix

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkVetCost measures what lockedcall costs as a vet tool against
// plain go vet, side by side: each round runs `go vet ./...` and `go vet
// -vettool=lockedcall ./...` over each module, each from a fresh copy of a
// build cache in which the module and its tests are compiled and nothing is
// vetted. It reports the medians over the rounds of the wall time and of the
// largest process's peak memory, and lockedcall's over go vet's:
//
//	go test -run '^$' -bench VetCost -benchtime 3x ./cmd/lockedcall
//
// The modules are gpuinit's root module, or the directories in
// LOCKEDCALL_COST_MODULES (separated by colons). The benchmark needs cp.
func BenchmarkVetCost(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "lockedcall")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	modules := filepath.SplitList(os.Getenv("LOCKEDCALL_COST_MODULES"))
	if len(modules) == 0 {
		root, err := filepath.Abs("../../..")
		if err != nil {
			b.Fatal(err)
		}
		modules = []string{root}
	}
	for _, dir := range modules {
		// Built once: the sub-benchmark runs once with b.N = 1, then with
		// -benchtime's count.
		warm := filepath.Join(b.TempDir(), "warm")
		for _, args := range [][]string{{"build", "./..."}, {"test", "-vet=off", "-count=1", "-run", "^$", "./..."}} {
			cmd := exec.Command("go", args...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOCACHE="+warm)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		b.Run(filepath.Base(dir), func(b *testing.B) {
			var vet, lc vetRuns
			b.ResetTimer()
			for i := range b.N {
				// Each goes first in every other round: a machine that
				// slows down or speeds up within a round favours neither.
				if i%2 == 0 {
					vet.add(b, dir, warm)
					lc.add(b, dir, warm, "-vettool="+bin)
				} else {
					lc.add(b, dir, warm, "-vettool="+bin)
					vet.add(b, dir, warm)
				}
			}
			b.StopTimer()
			b.ReportMetric(vet.medianSeconds(), "vet-s")
			b.ReportMetric(lc.medianSeconds(), "lockedcall-s")
			b.ReportMetric(lc.medianSeconds()/vet.medianSeconds(), "time-ratio")
			b.ReportMetric(float64(vet.medianRSS())/(1<<20), "vet-MiB")
			b.ReportMetric(float64(lc.medianRSS())/(1<<20), "lockedcall-MiB")
			b.ReportMetric(float64(lc.medianRSS())/float64(vet.medianRSS()), "memory-ratio")
		})
	}
}

// vetRuns are the wall times and peak memories of one command's rounds.
type vetRuns struct {
	wall []time.Duration
	rss  []int64
}

// add runs go vet with extra arguments over dir's packages, from a fresh
// copy of the build cache warm, and records it. Findings make go vet exit
// with status 1; a failure to build is anything else, or a panic.
func (r *vetRuns) add(b *testing.B, dir, warm string, extra ...string) {
	b.Helper()
	b.StopTimer()
	cache := filepath.Join(b.TempDir(), "cache")
	if out, err := exec.Command("cp", "-a", warm, cache).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	cmd := exec.Command("go", append(append([]string{"vet"}, extra...), "./...")...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOCACHE="+cache)
	b.StartTimer()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	b.StopTimer()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 || strings.Contains(string(out), "panic:") {
		b.Fatalf("go vet %s: %v\n%s", strings.Join(extra, " "), err, out)
	}
	r.wall = append(r.wall, wall)
	// wait4's maximum resident set size covers the process and those it
	// waited for: the largest vet-tool process of the run, in KiB.
	r.rss = append(r.rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10)
	os.RemoveAll(cache)
	b.StartTimer()
}

func (r *vetRuns) medianSeconds() float64 { return median(r.wall).Seconds() }
func (r *vetRuns) medianRSS() int64       { return median(r.rss) }

func median[T time.Duration | int64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
