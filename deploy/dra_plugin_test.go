package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// draObjects decodes every document of the DRA plugin's manifests strictly,
// by kind, after checking that its kustomization lists every file.
func draObjects(t *testing.T) map[string]any {
	t.Helper()
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	require.NoError(t, decodeStrict(readManifest(t, "dra/kustomization.yaml"), &k))
	files, err := filepath.Glob("kubernetes/dra/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" {
			assert.Contains(t, k.Resources, name, "the kustomization lists %s", name)
		}
	}
	objects := map[string]any{}
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join("kubernetes/dra", r))
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var kind struct{ Kind string }
			require.NoError(t, yaml.Unmarshal([]byte(doc), &kind))
			var out any
			switch kind.Kind {
			case "DaemonSet":
				out = &appsv1.DaemonSet{}
			case "ServiceAccount":
				out = &corev1.ServiceAccount{}
			case "ClusterRole":
				out = &rbacv1.ClusterRole{}
			case "ClusterRoleBinding":
				out = &rbacv1.ClusterRoleBinding{}
			case "DeviceClass":
				out = &resourcev1.DeviceClass{}
			default:
				t.Fatalf("%s: unexpected kind %q", r, kind.Kind)
			}
			require.NoError(t, decodeStrict([]byte(doc), out), "%s: %s", r, kind.Kind)
			_, dup := objects[kind.Kind]
			require.False(t, dup, "one %s", kind.Kind)
			objects[kind.Kind] = out
		}
	}
	return objects
}

// TestDRAPluginManifestsHangTogether: the DaemonSet runs as the account the
// role is bound to, which may publish ResourceSlices and read claims and
// nodes; the DeviceClass selects the driver name the plugin registers; the
// plugin's sockets are in the kubelet's directories at the same paths inside
// and out; the node's name comes from the downward API.
func TestDRAPluginManifestsHangTogether(t *testing.T) {
	o := draObjects(t)
	ds := o["DaemonSet"].(*appsv1.DaemonSet)
	sa := o["ServiceAccount"].(*corev1.ServiceAccount)
	role := o["ClusterRole"].(*rbacv1.ClusterRole)
	binding := o["ClusterRoleBinding"].(*rbacv1.ClusterRoleBinding)
	class := o["DeviceClass"].(*resourcev1.DeviceClass)
	spec := ds.Spec.Template.Spec

	assert.Equal(t, "gpuinit-system", ds.Namespace)
	assert.Equal(t, sa.Name, spec.ServiceAccountName)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	allows := func(group, resource string, verbs ...string) bool {
		return slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
				!slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(r.Verbs, v) })
		})
	}
	assert.True(t, allows("resource.k8s.io", "resourceslices", "get", "list", "watch", "create", "update", "delete"))
	assert.True(t, allows("resource.k8s.io", "resourceclaims", "get"))
	assert.True(t, allows("", "nodes", "get"))

	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	arg := func(name string) string {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
				return v
			}
		}
		t.Fatalf("no -%s", name)
		return ""
	}
	driver := arg("driver-name")
	require.Len(t, class.Spec.Selectors, 1)
	assert.Equal(t, `device.driver == "`+driver+`"`, class.Spec.Selectors[0].CEL.Expression)
	assert.Equal(t, driver, class.Name)
	for _, dir := range []string{arg("plugin-dir"), arg("registrar-dir")} {
		assert.Equal(t, dir, mountOf(t, ds, dir), "%s at the same path inside and outside", dir)
	}
	assert.Equal(t, "/var/lib/kubelet/plugins/"+driver, arg("plugin-dir"))
	assert.Equal(t, "/var/lib/kubelet/plugins_registry", arg("registrar-dir"))
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NODE_NAME" })
	require.GreaterOrEqual(t, i, 0, "NODE_NAME is set")
	assert.Equal(t, "spec.nodeName", c.Env[i].ValueFrom.FieldRef.FieldPath)

	// One pod per node at a time, a tight security context, no GPU taken.
	assert.Equal(t, int32(0), ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntVal)
	for name := range c.Resources.Limits {
		assert.NotContains(t, string(name), "gpu", "limits %s", name)
	}
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.ReadOnlyRootFilesystem && !*sc.AllowPrivilegeEscalation && !*sc.Privileged)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.False(t, spec.HostNetwork || spec.HostPID || spec.HostIPC)
}
