package build

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestWorkflowRunsCIAndKeepsForksOffTheGPURunner checks the forge's workflow:
// standard runners run .ci/run; the self-hosted GPU runner runs the smoke test
// and never a pull request from a fork.
func TestWorkflowRunsCIAndKeepsForksOffTheGPURunner(t *testing.T) {
	raw, err := os.ReadFile("../.github/workflows/ci.yml")
	require.NoError(t, err)
	var wf struct {
		Jobs map[string]struct {
			RunsOn any    `yaml:"runs-on"`
			If     string `yaml:"if"`
			Steps  []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &wf))
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
	cond := wf.Jobs["gpu"].If
	assert.Contains(t, cond, "github.event.pull_request.head.repo.full_name == github.repository",
		"a fork's pull request must not reach the self-hosted runner")
	assert.NotContains(t, cond, "||  true")
}
