package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeSampleIntro is the line of README.md's gpuprobe section that the
// sample output follows, in a fenced block.
const readmeSampleIntro = "`go run ./cmd/gpuprobe` on a development machine without a GPU"

// durations are the figures a run measures: the same run twice differs in
// them only, with the padding that aligns them.
var durations = regexp.MustCompile(` +\d+\.\d ms`)

// TestTheREADMEPrintsGpuprobesOutput runs gpuprobe as the README's sample
// says, on a machine without a GPU (auto, no flags), and checks that the
// README prints what it prints, durations aside.
func TestTheREADMEPrintsGpuprobesOutput(t *testing.T) {
	if !cgoBackends {
		t.Skip("the README's sample is a build with the GPU backends (cgo on Linux)")
	}
	env := fakedriver.NoGPUHost(t)
	if fakedriver.Loadable(env, fakedriver.CUDANames...) || fakedriver.Loadable(env, fakedriver.HIPNames...) {
		t.Skip("a vendor runtime is installed here: its backend says no device, not the sample's no driver")
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), readmeSampleIntro)
	require.True(t, ok, "README.md's gpuprobe section introduces its sample with %q", readmeSampleIntro)
	_, block, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	sample, _, ok := strings.Cut(block, "```\n")
	require.True(t, ok)

	r := probeRun(t, buildProbe(t), env)
	require.Equal(t, exitOK, r.code, r.stderr)
	normal := func(s string) string { return durations.ReplaceAllString(s, " N ms") }
	if normal(sample) != normal(r.stdout) {
		t.Errorf("README.md's sample is not what gpuprobe prints; paste this in (the durations may stay):\n\n%s", r.stdout)
	}
	assert.Contains(t, r.stdout, "result      ok on sim", "the sample is a fallback to sim")
}
