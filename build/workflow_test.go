package build

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// workflow is the part of .github/workflows/ci.yml the tests check.
type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		RunsOn    any    `yaml:"runs-on"`
		Container string `yaml:"container"`
		If        string `yaml:"if"`
		Steps     []struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Run  string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T) workflow {
	t.Helper()
	raw, err := os.ReadFile("../.github/workflows/ci.yml")
	require.NoError(t, err)
	var wf workflow
	require.NoError(t, yaml.Unmarshal(raw, &wf))
	return wf
}

// TestWorkflowRunsCIAndKeepsForksOffTheGPURunner checks the forge's workflow:
// standard runners run .ci/run; the self-hosted GPU runner runs the smoke test
// and never a pull request from a fork.
func TestWorkflowRunsCIAndKeepsForksOffTheGPURunner(t *testing.T) {
	wf := readWorkflow(t)
	runs := func(job string) string {
		var all []string
		for _, s := range wf.Jobs[job].Steps {
			all = append(all, s.Run)
		}
		return strings.Join(all, "\n")
	}
	require.Contains(t, wf.Jobs, "ci")
	assert.Equal(t, "ubuntu-latest", wf.Jobs["ci"].RunsOn)
	assert.Contains(t, runs("ci"), "bash .ci/run")

	require.Contains(t, wf.Jobs, "gpu")
	assert.ElementsMatch(t, []any{"self-hosted", "gpu"}, wf.Jobs["gpu"].RunsOn)
	assert.Contains(t, runs("gpu"), "build/gpu-smoke.sh")
	// The condition, exactly: any other clause could let a fork's pull
	// request onto the self-hosted runner. It is sound only for these
	// triggers (pull_request_target, say, would run a fork's code with the
	// base repository's name), so they are checked too.
	assert.Equal(t, "github.event_name == 'push' || github.event.pull_request.head.repo.full_name == github.repository",
		wf.Jobs["gpu"].If, "a fork's pull request must not reach the self-hosted runner")
	var triggers []string
	for on := range wf.On {
		triggers = append(triggers, on)
	}
	assert.ElementsMatch(t, []string{"push", "pull_request"}, triggers)
}

// goRelease is the Go release README.md says CI runs, which the workflow and
// the Dockerfiles' build stages pin.
func goRelease(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`CI runs (1\.\d+\.\d+)\)`).FindSubmatch(readme)
	require.NotNil(t, m, "README.md names the Go release CI runs")
	return string(m[1])
}

// TestWorkflowPinsTheGoReleaseTheREADMENames checks that both jobs run the Go
// release README.md says CI runs: the ci job's image tag, and setup-go's
// go-version in the gpu job (not go.mod's go line, a minimum).
func TestWorkflowPinsTheGoReleaseTheREADMENames(t *testing.T) {
	release := goRelease(t)

	wf := readWorkflow(t)
	assert.Equal(t, "golang:"+release+"-bookworm", wf.Jobs["ci"].Container)
	var setups int
	for _, s := range wf.Jobs["gpu"].Steps {
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			setups++
			assert.Equal(t, map[string]string{"go-version": release}, s.With)
		}
	}
	assert.Equal(t, 1, setups, "the gpu job installs Go with setup-go")
}
