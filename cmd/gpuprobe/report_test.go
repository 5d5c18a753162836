package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/internal/docnames"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleIntro is the line of the package doc (doc.go) that the sample
// output follows, in a code block.
const sampleIntro = "On a development machine without a GPU, go run ./cmd/gpuprobe prints this report."

// durations are the figures a run measures: the same run twice differs in
// them only, with the padding that aligns them.
var durations = regexp.MustCompile(` +\d+\.\d ms`)

// TestThePackageDocPrintsGpuprobesOutput runs gpuprobe as the package doc's
// sample says, on a machine without a GPU (auto, no flags), and checks that
// the doc prints what it prints, durations aside.
func TestThePackageDocPrintsGpuprobesOutput(t *testing.T) {
	t.Parallel() // a probe of its own, mostly waiting
	if !cgoBackends {
		t.Skip("the doc's sample is a build with the GPU backends (cgo on Linux)")
	}
	env := fakedriver.NoGPUHost(t)
	if fakedriver.Loadable(env, fakedriver.CUDANames...) || fakedriver.Loadable(env, fakedriver.HIPNames...) {
		t.Skip("a vendor runtime is installed here: its backend says no device, not the sample's no driver")
	}
	doc, err := docnames.PackageDoc("doc.go")
	require.NoError(t, err)
	sample, err := docnames.CodeAfter(doc, sampleIntro)
	require.NoError(t, err, "the package doc introduces its sample with %q", sampleIntro)

	r := probeRun(t, buildProbe(t), env)
	require.Equal(t, exitOK, r.code, r.stderr)
	normal := func(s string) string { return durations.ReplaceAllString(s, " N ms") }
	if normal(sample) != normal(r.stdout) {
		pasted := "//\t" + strings.ReplaceAll(strings.TrimSuffix(r.stdout, "\n"), "\n", "\n//\t")
		t.Errorf("doc.go's sample is not what gpuprobe prints; paste this in (the durations may stay):\n\n%s", pasted)
	}
	assert.Contains(t, r.stdout, "result      ok on sim", "the sample is a fallback to sim")
}
