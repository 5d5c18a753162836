package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/childtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestMain(m *testing.M) { childtest.Main(m) }

// gpuprobe returns the path of the repository's gpuprobe, built once for the
// tests that run it. Tests only run it; none may change it.
func gpuprobe(t *testing.T) string {
	t.Helper()
	return childtest.BinaryOf(t, childtest.Build{Dir: "..", Package: "./cmd/gpuprobe"})
}

// TestGpuprobeLabelsAndMetricsAreValid runs gpuprobe on sim, then checks its
// NFD feature file with NFD's own parser, the labels that gives with
// Kubernetes' own validation, and its metrics with Prometheus's own text
// parser, against its JSON report of the same run.
func TestGpuprobeLabelsAndMetricsAreValid(t *testing.T) {
	dir, featuresDir := t.TempDir(), t.TempDir() // featuresDir, NFD's features.d, holds the feature file alone
	bin := gpuprobe(t)
	nfd, prom := filepath.Join(featuresDir, "gpuinit"), filepath.Join(dir, "gpuinit.prom")
	cmd := exec.Command(bin, "-backend", "sim", "-json", "-nfd-file", nfd, "-prom-file", prom)
	stdout, err := cmd.Output()
	require.NoError(t, err)
	var rep struct {
		Backend       string  `json:"backend"`
		DriverVersion int     `json:"driver_version"`
		InitMillis    float64 `json:"init_ms"`
		Devices       []struct {
			Arch string `json:"arch"`
		} `json:"devices"`
		Scenarios []struct {
			Name           string  `json:"name"`
			Verdict        string  `json:"verdict"`
			DurationMillis float64 `json:"duration_ms"`
		} `json:"scenarios"`
		RNG struct {
			Verdict string `json:"verdict"`
		} `json:"rng"`
		ExitCode int `json:"exit_code"`
	}
	require.NoError(t, json.Unmarshal(stdout, &rep))
	require.Zero(t, rep.ExitCode)

	labels := nfdLabels(t, featuresDir)
	for key, value := range labels {
		assert.Empty(t, validation.IsQualifiedName(key), "label key %q", key)
		assert.Empty(t, validation.IsValidLabelValue(value), "label value %q", value)
		assert.True(t, strings.HasPrefix(key, "gpuinit.io/"))
	}
	assert.Equal(t, "ok", labels["gpuinit.io/probe"])
	assert.Equal(t, rep.Backend, labels["gpuinit.io/backend"])
	assert.Equal(t, strconv.Itoa(rep.DriverVersion), labels["gpuinit.io/driver-version"])
	assert.Equal(t, strconv.Itoa(len(rep.Devices)), labels["gpuinit.io/devices"])
	assert.Equal(t, rep.RNG.Verdict, labels["gpuinit.io/rng"])
	assert.Equal(t, "true", labels["gpuinit.io/arch."+rep.Devices[0].Arch])
	features, err := os.ReadFile(nfd)
	require.NoError(t, err)
	expiry := nfdExpiry(t, features)

	f, err := os.Open(prom)
	require.NoError(t, err)
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	require.NoError(t, err, "Prometheus's text parser accepts the file")
	for _, name := range []string{"gpuinit_probe_success", "gpuinit_scenario_duration_seconds", "gpuinit_init_duration_seconds",
		"gpuinit_devices", "gpuinit_driver_version", "gpuinit_probe_timestamp_seconds"} {
		mf := families[name]
		require.NotNil(t, mf, name)
		assert.NotEmpty(t, mf.GetHelp(), "%s has HELP", name)
		assert.Equal(t, dto.MetricType_GAUGE, mf.GetType(), "%s has TYPE", name)
	}
	gauge := func(name string) float64 { return families[name].GetMetric()[0].GetGauge().GetValue() }
	assert.Equal(t, 1.0, gauge("gpuinit_probe_success"))
	ran := time.Unix(int64(gauge("gpuinit_probe_timestamp_seconds")), 0)
	assert.Equal(t, ran.Add(time.Hour).UTC(), expiry, "a single run's labels expire an hour after it ran")
	assert.Equal(t, float64(len(rep.Devices)), gauge("gpuinit_devices"))
	assert.Equal(t, float64(rep.DriverVersion), gauge("gpuinit_driver_version"))
	assert.InDelta(t, rep.InitMillis/1000, gauge("gpuinit_init_duration_seconds"), 1e-9)
	scenarios := families["gpuinit_scenario_duration_seconds"].GetMetric()
	require.Len(t, scenarios, len(rep.Scenarios))
	for i, s := range rep.Scenarios {
		want := map[string]string{"scenario": s.Name, "verdict": s.Verdict}
		got := map[string]string{}
		for _, l := range scenarios[i].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, want, got)
		assert.InDelta(t, s.DurationMillis/1000, scenarios[i].GetGauge().GetValue(), 1e-9)
	}
}

// TestDaemonSetArgsAreGpuprobeFlags parses each DaemonSet's arguments with
// gpuprobe itself: an unknown or misspelled flag exits 2, -h after valid ones 0.
func TestDaemonSetArgsAreGpuprobeFlags(t *testing.T) {
	bin := gpuprobe(t)
	// Each image's entrypoint, as the manifests' comments say, then the
	// manifest's arguments: the whole command line the pod runs.
	for file, backend := range map[string]string{"daemonset-nvidia.yaml": "cuda", "daemonset-amd.yaml": "hip"} {
		ds := daemonSet(t, file)
		args := append(append([]string{"-require-gpu", "-backend", backend}, ds.Spec.Template.Spec.Containers[0].Args...), "-h")
		out, err := exec.Command(bin, args...).CombinedOutput()
		assert.NoError(t, err, "%s: gpuprobe %v:\n%s", file, args, out)
	}
	out, err := exec.Command(bin, "-intervall=10m", "-h").CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "%s", out)
	assert.Equal(t, 2, exitErr.ExitCode(), "a misspelled flag is caught")
}
