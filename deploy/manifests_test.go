package deploy

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// decodeStrict decodes one manifest into out as the API server's strict field
// validation does: case-sensitive field names (encoding/json alone would
// accept "readOnlyRootFileSystem"), unknown fields and duplicate keys are
// errors.
func decodeStrict(data []byte, out any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, out, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func readManifest(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("kubernetes", name))
	require.NoError(t, err)
	return data
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data := readManifest(t, name)
			var kind struct{ Kind string }
			require.NoError(t, yaml.Unmarshal(data, &kind))
			var out any
			switch kind.Kind {
			case "DaemonSet":
				out = &appsv1.DaemonSet{}
			case "Namespace":
				out = &corev1.Namespace{}
			case "Kustomization":
				var k struct {
					APIVersion string   `json:"apiVersion"`
					Kind       string   `json:"kind"`
					Resources  []string `json:"resources"`
				}
				require.NoError(t, decodeStrict(data, &k))
				for _, r := range k.Resources {
					assert.FileExists(t, filepath.Join("kubernetes", r))
				}
				return
			default:
				t.Fatalf("unexpected kind %q", kind.Kind)
			}
			require.NoError(t, decodeStrict(data, out))
		})
	}
}

func TestAMisspelledFieldFailsTheDecoding(t *testing.T) {
	data := strings.Replace(string(readManifest(t, "daemonset-nvidia.yaml")), "runtimeClassName:", "runtimeClasName:", 1)
	require.Error(t, decodeStrict([]byte(data), &appsv1.DaemonSet{}))
	data = strings.Replace(string(readManifest(t, "daemonset-amd.yaml")), "readOnlyRootFilesystem:", "readOnlyRootFileSystem:", 1)
	require.Error(t, decodeStrict([]byte(data), &appsv1.DaemonSet{}))
}

func daemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	require.NoError(t, decodeStrict(readManifest(t, name), &ds))
	return &ds
}

func TestDaemonSetInvariants(t *testing.T) {
	for _, tc := range []struct {
		file, image, vendor, taint string
		// The host device paths it may mount, each of which it must: none
		// for NVIDIA, whose container runtime provides the devices; those
		// ROCm opens for AMD.
		devices []string
	}{
		{"daemonset-nvidia.yaml", "gpuinit/gpuprobe:cuda", "10de", "nvidia.com/gpu", nil},
		{"daemonset-amd.yaml", "gpuinit/gpuprobe:rocm", "1002", "amd.com/gpu", []string{"/dev/kfd", "/dev/dri"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ds := daemonSet(t, tc.file)
			spec := ds.Spec.Template.Spec
			assert.Equal(t, "gpuinit-system", ds.Namespace)
			assert.Equal(t, ds.Spec.Selector.MatchLabels, filterLabels(ds.Spec.Template.Labels, ds.Spec.Selector.MatchLabels), "the selector matches the pods")
			require.Len(t, spec.Containers, 1)
			c := spec.Containers[0]
			assert.Equal(t, tc.image, c.Image)

			// GPU nodes, by the labels NFD itself sets for the vendor's PCI id.
			terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			require.NotEmpty(t, terms)
			for _, term := range terms {
				require.Len(t, term.MatchExpressions, 1)
				assert.Regexp(t, `^feature\.node\.kubernetes\.io/pci-([0-9a-f]{4}_)?`+tc.vendor+`\.present$`, term.MatchExpressions[0].Key)
			}
			assert.True(t, slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == tc.taint }), "tolerates %s", tc.taint)

			// No GPU taken away from workloads; small requests and limits.
			for name := range c.Resources.Requests {
				assert.NotContains(t, string(name), "gpu", "requests %s", name)
			}
			for name := range c.Resources.Limits {
				assert.NotContains(t, string(name), "gpu", "limits %s", name)
			}
			assert.LessOrEqual(t, c.Resources.Requests.Cpu().Cmp(resource.MustParse("100m")), 0)
			assert.LessOrEqual(t, c.Resources.Requests.Memory().Cmp(resource.MustParse("128Mi")), 0)
			assert.LessOrEqual(t, c.Resources.Limits.Memory().Cmp(resource.MustParse("512Mi")), 0)
			assert.False(t, c.Resources.Limits.Cpu().IsZero(), "a CPU limit")

			// A tight security context.
			sc := c.SecurityContext
			require.NotNil(t, sc)
			assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "read-only root filesystem")
			assert.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "no privilege escalation")
			assert.True(t, sc.Privileged == nil || !*sc.Privileged, "not privileged")
			require.NotNil(t, sc.Capabilities)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assert.Empty(t, sc.Capabilities.Add)
			assert.False(t, spec.HostNetwork || spec.HostPID || spec.HostIPC)
			assert.True(t, spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken, "no API token: it needs no API access")

			// The feature file and metrics go to the host directories NFD and
			// node_exporter read.
			nfd := mountOf(t, ds, "/etc/kubernetes/node-feature-discovery/features.d")
			prom := mountOf(t, ds, "/var/lib/node_exporter/textfile_collector")
			assert.Contains(t, c.Args, "-nfd-file="+nfd+"/gpuinit")
			assert.Contains(t, c.Args, "-prom-file="+prom+"/gpuinit.prom")
			assert.True(t, slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-interval=") }))

			// Only the devices it needs, for either vendor.
			for _, d := range tc.devices {
				mountOf(t, ds, d)
			}
			for _, v := range spec.Volumes {
				if v.HostPath != nil && strings.HasPrefix(path.Clean(v.HostPath.Path), "/dev") {
					assert.Contains(t, tc.devices, path.Clean(v.HostPath.Path), "volume %s mounts a host device path it does not need", v.Name)
				}
			}

			if tc.vendor == "10de" {
				require.NotNil(t, spec.RuntimeClassName)
				assert.Equal(t, "nvidia", *spec.RuntimeClassName)
				assert.Contains(t, c.Env, corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"})
			} else {
				// ROCm's device nodes are opened through the video and render groups.
				assert.Subset(t, spec.SecurityContext.SupplementalGroups, []int64{44, 109}, "video and render")
			}
		})
	}
}

// mountOf returns where the container mounts the host path, failing if it
// does not.
func mountOf(t *testing.T, ds *appsv1.DaemonSet, hostPath string) string {
	t.Helper()
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath == nil || v.HostPath.Path != hostPath {
			continue
		}
		for _, m := range ds.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				assert.False(t, strings.HasPrefix(hostPath, "/dev") && m.ReadOnly, "device nodes are opened read-write")
				return m.MountPath
			}
		}
	}
	t.Fatalf("%s: host path %s is not mounted", ds.Name, hostPath)
	return ""
}

func filterLabels(labels, keep map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keep {
		out[k] = labels[k]
	}
	return out
}

// TestTheProbesBringTheGPUUpInAPreflightChild: a driver that hangs in its
// init must be reported by the probe, not wedge it.
func TestTheProbesBringTheGPUUpInAPreflightChild(t *testing.T) {
	for _, file := range []string{"daemonset-nvidia.yaml", "daemonset-amd.yaml"} {
		ds := daemonSet(t, file)
		var preflight string
		for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GPUINIT_PREFLIGHT" {
				preflight = e.Value
			}
		}
		d, err := time.ParseDuration(preflight)
		if assert.NoError(t, err, "%s: GPUINIT_PREFLIGHT=%q", file, preflight) {
			assert.Positive(t, d, file)
		}
	}
}
