package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fetch scripts download in CI's legs only; these tests run them where
// they download nothing: apt-get, dpkg-deb and dpkg-query are stand-ins on
// PATH that log their calls, and the fetch finds its work done.

// shims puts stand-ins for the package and download tools first on PATH: each
// appends its name and arguments to the returned log; dpkg-query answers
// "installed" if installed is set, and the others fail if fail is set.
func shims(t *testing.T, installed, fail bool) (env []string, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	for _, tool := range []string{"apt-get", "dpkg-deb", "dpkg-query", "curl", "wget"} {
		body := "#!/bin/sh\necho \"" + tool + " $*\" >>" + log + "\n"
		if tool == "dpkg-query" && installed {
			body += "printf 'install ok installed'\nexit 0\n"
		}
		if fail {
			body += "exit 1\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, tool), []byte(body), 0o755))
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH")}, log
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// evalEnv evaluates what script prints, as CI's legs do, and returns the
// variables it sets.
func evalEnv(t *testing.T, env []string, script string, vars ...string) map[string]string {
	t.Helper()
	show := `eval "$(bash ` + script + `)" || exit 1` + "\n"
	for _, v := range vars {
		show += `printf '%s\n' "${` + v + `-<unset>}"` + "\n"
	}
	cmd := exec.Command("bash", "-c", show)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(vars), "%s", out)
	got := map[string]string{}
	for i, v := range vars {
		got[v] = lines[i]
	}
	return got
}

func TestFetchScriptsParse(t *testing.T) {
	for _, script := range []string{"fetch-cuda-sdk.sh", "fetch-hip-sdk.sh"} {
		out, err := exec.Command("bash", "-n", script).CombinedOutput()
		assert.NoError(t, err, "bash -n %s: %s", script, out)
	}
}

// TestFetchCUDASDKPrintsItsEnvironmentFromTheCache: a cache with its stamp
// is used as it is, and the environment points into it.
func TestFetchCUDASDKPrintsItsEnvironmentFromTheCache(t *testing.T) {
	cache := t.TempDir()
	sdk := filepath.Join(cache, "cuda")
	require.NoError(t, os.MkdirAll(sdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, ".complete"), nil, 0o644))
	// A cache from before NVML was fetched lacks driver/libnvidia-ml.so.1,
	// and is fetched again; this one has it.
	require.NoError(t, os.MkdirAll(filepath.Join(sdk, "driver"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "driver", "libnvidia-ml.so.1"), nil, 0o644))
	env, log := shims(t, false, true)
	env = append(env, "GPUINIT_SDK_CACHE="+cache)
	lib := sdk + "/usr/lib/x86_64-linux-gnu"

	out, code := runScript(t, env, "fetch-cuda-sdk.sh")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, strings.Join([]string{
		`export CGO_ENABLED=1`,
		`export CGO_CFLAGS="-I` + sdk + `/usr/include"`,
		`export CGO_LDFLAGS="-L` + lib + `/stubs -L` + lib + `"`,
		`export LD_LIBRARY_PATH="` + sdk + `/driver:` + lib + `${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"`,
	}, "\n")+"\n", out, "only the environment, on stdout, and no fetch")

	vars := []string{"CGO_ENABLED", "CGO_CFLAGS", "CGO_LDFLAGS", "LD_LIBRARY_PATH"}
	got := evalEnv(t, append(env, "LD_LIBRARY_PATH=/opt/lib"), "fetch-cuda-sdk.sh", vars...)
	assert.Equal(t, map[string]string{
		"CGO_ENABLED":     "1",
		"CGO_CFLAGS":      "-I" + sdk + "/usr/include",
		"CGO_LDFLAGS":     "-L" + lib + "/stubs -L" + lib,
		"LD_LIBRARY_PATH": sdk + "/driver:" + lib + ":/opt/lib",
	}, got)
	got = evalEnv(t, append(env, "LD_LIBRARY_PATH="), "fetch-cuda-sdk.sh", "LD_LIBRARY_PATH")
	assert.Equal(t, sdk+"/driver:"+lib, got["LD_LIBRARY_PATH"], "no empty entry, which would mean the working directory")
	assert.Empty(t, calls(t, log), "nothing fetched")
}

// TestFetchHIPSDKInstallsOnlyWhatIsMissing runs a copy of the script whose
// header checks look in a directory of the test's, so that the outcome does
// not depend on this machine's /usr/include.
func TestFetchHIPSDKInstallsOnlyWhatIsMissing(t *testing.T) {
	src, err := os.ReadFile("fetch-hip-sdk.sh")
	require.NoError(t, err)
	include := t.TempDir()
	require.Equal(t, 2, strings.Count(string(src), "/usr/include/"), "the script checks two headers under /usr/include")
	script := filepath.Join(t.TempDir(), "fetch-hip-sdk.sh")
	require.NoError(t, os.WriteFile(script, []byte(strings.ReplaceAll(string(src), "/usr/include/", include+"/")), 0o755))
	want := "export CGO_ENABLED=1\nexport CGO_CFLAGS=\"-D__HIP_PLATFORM_AMD__\"\nexport CGO_LDFLAGS=\"\"\n"

	t.Run("headers missing", func(t *testing.T) {
		env, log := shims(t, true, false)
		out, code := runScript(t, env, script)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "fetch-hip-sdk: HIP headers missing after install")
		assert.NotContains(t, out, "export ")
		assert.NotContains(t, strings.Join(calls(t, log), "\n"), "apt-get", "installed: nothing to install")
	})

	for _, h := range []string{"hip/hip_runtime_api.h", "hiprand/hiprand.h"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(include, h)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(include, h), nil, 0o644))
	}
	t.Run("installed", func(t *testing.T) {
		env, log := shims(t, true, false)
		out, code := runScript(t, env, script)
		assert.Equal(t, 0, code, out)
		assert.Equal(t, want, out, "only the environment, and no install")
		assert.NotContains(t, strings.Join(calls(t, log), "\n"), "apt-get")
		got := evalEnv(t, env, script, "CGO_ENABLED", "CGO_CFLAGS", "CGO_LDFLAGS")
		assert.Equal(t, map[string]string{"CGO_ENABLED": "1", "CGO_CFLAGS": "-D__HIP_PLATFORM_AMD__", "CGO_LDFLAGS": ""}, got)
	})
	t.Run("not installed: apt-get installs the three packages", func(t *testing.T) {
		env, log := shims(t, false, false)
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), env...)
		stdout, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, want, string(stdout), "apt-get's output goes to stderr")
		assert.Equal(t, []string{
			"apt-get -qq update",
			"apt-get -qq install -y --no-install-recommends libamdhip64-dev libhiprand-dev librocrand-dev",
		}, withPrefix(calls(t, log), "apt-get "))
	})
}

func withPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
