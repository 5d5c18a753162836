//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/device/health"
	"github.com/gpuinit/gpuinit/internal/childtest"
	"github.com/gpuinit/gpuinit/internal/docnames"
	"github.com/gpuinit/gpuinit/internal/fakedriver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostRow is one row of the package doc's list of host situations: what the
// example server (CPU fallback and preflight on, as shipped) answers there.
type hostRow struct {
	situation string
	class     string // "" where no initialization fails
	live      string
	ready     string
	status    string // what the status says, in the doc's words
	// setUp returns the host's environment and the server's arguments;
	// says is a text the status's reason must hold; state is the status's
	// state. The last row, a bad setting, has neither: see badSettings.
	setUp func(t *testing.T) (env, args []string)
	says  string
	state string
}

// badSettings are the settings of the table's last row, "a bad setting" (its
// setUp is nil): each keeps the server from starting, and its error must say
// what it does, the variable's name included.
var badSettings = []struct{ name, env, says string }{
	{"a value that does not parse", "GPUINIT_PREFLIGHT=bogus", `GPUINIT_PREFLIGHT="bogus": want a deadline`},
	{"a library file that is not there", "GPUINIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
		`GPUINIT_CUDA_LIBRARY="/nonexistent/libcuda.so.1" names no file`},
	{"a misspelt variable", "GPUINIT_PREFLIGT=30s",
		"device: GPUINIT_PREFLIGT is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting"},
	{"a variable with a word left out", "GPUINIT_SIM_DELAY=3s",
		"device: GPUINIT_SIM_DELAY is set, but gpuinit reads no such variable (did you mean GPUINIT_SIM_INIT_DELAY?): bad setting"},
	{"a variable with a word added", "GPUINIT_PREFLIGHT_DEADLINE=30s",
		"device: GPUINIT_PREFLIGHT_DEADLINE is set, but gpuinit reads no such variable (did you mean GPUINIT_PREFLIGHT?): bad setting"},
	{"a variable with a word cut short", "GPUINIT_CUDA_LIB=/x.so",
		"device: GPUINIT_CUDA_LIB is set, but gpuinit reads no such variable (did you mean GPUINIT_CUDA_LIBRARY?): bad setting"},
	{"a variable gpuinit has none like", "GPUINIT_COLOR=blue",
		"GPUINIT_COLOR is set, but gpuinit reads no such variable: unset it"},
}

// hostRows is the package doc's list, item for item (TestThePackageDocPrintsTheHostList).
var hostRows = []hostRow{
	{"a CPU-only host: no driver library", "no-gpu", "200", "200, degraded: draws on the CPU",
		"`class` no-gpu, `degraded`, the failure's kind `no-driver` (or `no-device` where a runtime is installed)",
		func(t *testing.T) ([]string, []string) { return fakedriver.NoGPUHost(t), nil }, "degraded: serving without a GPU", "failed"},
	{"an NVIDIA host whose GPUs are hidden on purpose (`CUDA_VISIBLE_DEVICES=-1` or empty)", "no-gpu", "200", "200, degraded: draws on the CPU",
		"the variable that hides them: `CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU`",
		func(t *testing.T) ([]string, []string) {
			return append(nvidiaHost(t, true, false), "CUDA_VISIBLE_DEVICES=-1"), []string{"-backend", "cuda"}
		}, `(no-gpu: CUDA_VISIBLE_DEVICES="-1" hides every GPU)`, "failed"},
	{"a container given no GPU: no `/dev/nvidia*`, the host's `/proc/driver/nvidia/version` visible", "no-gpu", "200", "200, degraded: draws on the CPU",
		"`no /dev/nvidiaN device node, though the NVIDIA kernel module is loaded`",
		func(t *testing.T) ([]string, []string) {
			return append(nvidiaHost(t, false, true), "GPUINIT_FAKE_CUDA_DEVICES=0"), []string{"-backend", "cuda"}
		}, "(no-gpu: no /dev/nvidiaN device node, though the NVIDIA kernel module is loaded", "failed"},
	{"an AMD pod given no GPU: no `/dev/kfd`, the host's KFD topology in sysfs", "no-gpu", "200", "200, degraded: draws on the CPU",
		"`no /dev/kfd, though the KFD topology lists 1 GPU(s)`",
		func(t *testing.T) ([]string, []string) {
			return append(amdHost(t, false), "GPUINIT_FAKE_HIP_DEVICES=0"), []string{"-backend", "hip"}
		}, "though the KFD topology lists 1 GPU(s): this process was given none", "failed"},
	{"an AMD host whose GPUs are hidden on purpose (`/dev/kfd` there, `HIP_VISIBLE_DEVICES=-1`)", "no-gpu", "200", "200, degraded: draws on the CPU",
		"the variable that hides them: `HIP_VISIBLE_DEVICES=\"-1\" hides every GPU`",
		func(t *testing.T) ([]string, []string) {
			return append(amdHost(t, true), "HIP_VISIBLE_DEVICES=-1"), []string{"-backend", "hip"}
		}, `(no-gpu: HIP_VISIBLE_DEVICES="-1" hides every GPU)`, "failed"},
	{"an AMD host whose GPUs are hidden on purpose (`/dev/kfd` there, `ROCR_VISIBLE_DEVICES` empty)", "no-gpu", "200", "200, degraded: draws on the CPU",
		"the variable that hides them: `ROCR_VISIBLE_DEVICES=\"\" hides every GPU`",
		func(t *testing.T) ([]string, []string) {
			return append(amdHost(t, true), "ROCR_VISIBLE_DEVICES="), []string{"-backend", "hip"}
		}, `(no-gpu: ROCR_VISIBLE_DEVICES="" hides every GPU)`, "failed"},
	{"GPU device nodes, the driver has not found the GPU yet (100)", "not-yet", "200 while retrying; 503 once retries ran out past the init deadline", "503, retrying",
		"`initializing`, `bring_up` with the attempts and `last_class` not-yet: `/dev/nvidia0 exists, so the GPU may not be ready yet`",
		func(t *testing.T) ([]string, []string) {
			return append(nvidiaHost(t, true, true), "GPUINIT_FAKE_CUDA_INIT=100"), []string{"-backend", "cuda"}
		}, "so the GPU may not be ready yet", "initializing"},
	{"the fabric manager still starting (802)", "not-yet", "200 while retrying; 503 once retries ran out past the init deadline", "503, retrying",
		"`initializing`, `bring_up` with the attempts, `last_class` not-yet and `CUDA_ERROR_SYSTEM_NOT_READY`",
		func(t *testing.T) ([]string, []string) {
			return append(nvidiaHost(t, true, true), "GPUINIT_FAKE_CUDA_INIT=802"), []string{"-backend", "cuda"}
		}, "CUDA_ERROR_SYSTEM_NOT_READY", "initializing"},
	{"user-space and kernel driver differ (803)", "needs-operator", "200", "503: never served around on the CPU; draws 503",
		"`class` needs-operator, the code, its name and the hint: an alert fires, no pod restarts",
		func(t *testing.T) ([]string, []string) {
			return append(nvidiaHost(t, true, true), "GPUINIT_FAKE_CUDA_INIT=803"), []string{"-backend", "cuda"}
		}, "(needs-operator: needs an operator", "failed"},
	{"the server's binary removed by a rolling upgrade", "", "200", "200",
		"`ready`: the preflight child is the running binary (`/proc/self/exe`)",
		func(t *testing.T) ([]string, []string) {
			return nvidiaHost(t, true, true), []string{"-backend", "cuda"}
		}, "", "ready"},
	{"a bad setting (`GPUINIT_PREFLIGHT=bogus`, a `GPUINIT_CUDA_LIBRARY` that names no file, a misspelt variable such as `GPUINIT_PREFLIGT`)", "", "—", "—",
		"nothing: the server refuses to start (exit 1), naming the variable; gpuprobe exits 2",
		nil, "", ""},
}

// nvidiaHost is a host with the fake libcuda (and NVML) and, as asked, a
// GPU device node and the NVIDIA module's /proc file.
func nvidiaHost(t *testing.T, nodes, module bool) []string {
	t.Helper()
	dir := t.TempDir()
	dev, proc := filepath.Join(dir, "dev"), filepath.Join(dir, "proc")
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "driver/nvidia"), 0o755))
	require.NoError(t, os.MkdirAll(dev, 0o755))
	if nodes {
		require.NoError(t, os.WriteFile(filepath.Join(dev, "nvidia0"), nil, 0o644))
	}
	if module {
		require.NoError(t, os.WriteFile(filepath.Join(proc, "driver/nvidia/version"), []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03\n"), 0o644))
	}
	return append([]string{"GPUINIT_CUDA_LIBRARY=" + fakedriver.BuildInto(t, dir, fakedriver.CUDA),
		"GPUINIT_NVML_LIBRARY=" + fakedriver.BuildInto(t, dir, fakedriver.NVML),
		"GPUINIT_CURAND_LIBRARY=" + fakedriver.NotInstalled("libcurand.so.10"),
		"GPUINIT_DEV_ROOT=" + dev, "GPUINIT_PROC_ROOT=" + proc, "CUDA_VISIBLE_DEVICES=0,1"}, fakedriver.ShortWaits...)
}

// amdHost is a pod on an AMD node with the fake ROCm runtime (two GPUs
// unless the caller says otherwise) and the host's KFD topology in sysfs. With
// kfd it was given the GPUs (/dev/kfd is there); without, it was given none.
func amdHost(t *testing.T, kfd bool) []string {
	t.Helper()
	dir := t.TempDir()
	sys, dev := filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
	node := filepath.Join(sys, "class/kfd/kfd/topology/nodes/1")
	require.NoError(t, os.MkdirAll(node, 0o755))
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(node, "properties"),
		[]byte("cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\ndomain 0\n"), 0o644))
	if kfd {
		require.NoError(t, os.WriteFile(filepath.Join(dev, "kfd"), nil, 0o666))
	}
	return []string{"GPUINIT_HIP_LIBRARY=" + fakedriver.BuildInto(t, dir, fakedriver.HIP),
		"GPUINIT_DEV_ROOT=" + dev, "GPUINIT_SYSFS_ROOT=" + sys}
}

// hostList renders hostRows as the package doc (doc.go) prints them: a
// list, one item a row, without the Markdown's backticks.
func hostList() string {
	var items []string
	for _, r := range hostRows {
		class := r.class
		if class == "" {
			class = "none"
		}
		item := r.situation + ". Class: " + class + ". Liveness: " + r.live + ". Readiness: " + r.ready +
			". Status: " + r.status + "."
		items = append(items, strings.ReplaceAll(item, "`", ""))
	}
	return docnames.List(items, 100)
}

// TestThePackageDocPrintsTheHostList keeps doc.go's list of hosts the rows
// that TestEachHostSituation runs, item for item.
func TestThePackageDocPrintsTheHostList(t *testing.T) {
	doc, err := docnames.PackageDoc("doc.go")
	require.NoError(t, err)
	if !strings.Contains(doc, hostList()) {
		pasted := "// " + strings.ReplaceAll(strings.TrimSuffix(hostList(), "\n"), "\n", "\n// ")
		t.Errorf("doc.go does not print the host list as the tests have it; paste this in:\n\n%s", pasted)
	}
}

// TestEachHostSituation runs the example server, as shipped, on each row's
// host over the fake drivers, and checks what its probes and status say.
func TestEachHostSituation(t *testing.T) {
	t.Parallel() // beside the package's other servers, mostly waiting too
	for _, row := range hostRows {
		t.Run(row.situation, func(t *testing.T) {
			t.Parallel() // servers over their own fakes, mostly waiting
			bin := childtest.Program(t)
			if row.situation == hostRows[len(hostRows)-1].situation { // a bad setting: no server
				for _, bad := range badSettings {
					t.Run(bad.name, func(t *testing.T) {
						// Bounded: a server that takes the setting serves until killed.
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
						cmd.Env = append(os.Environ(), bad.env)
						out, err := cmd.CombinedOutput()
						require.NoError(t, ctx.Err(), "the server started with %s instead of refusing: %s", bad.env, out)
						var exit *exec.ExitError
						require.ErrorAs(t, err, &exit, "%s", out)
						assert.Equal(t, 1, exit.ExitCode())
						assert.Contains(t, string(out), bad.says)
					})
				}
				return
			}
			env, args := row.setUp(t)
			switch row.situation {
			case hostRows[len(hostRows)-2].situation: // the binary removed after its start
				bin = placeOf(t, bin)
			}
			url, _, _ := startBinary(t, bin, env, args...)
			if bin != childtest.Program(t) {
				require.NoError(t, os.Remove(bin))
			}
			get(t, url+health.ReadyPath) // the first readiness probe starts init
			st := waitForState(t, url, row.state)
			if row.state == "initializing" {
				st = waitForStatus(t, url, func(s health.Status) bool { return s.BringUp != nil && s.BringUp.LastClass == row.class })
				assert.Contains(t, st.BringUp.LastError.Message, row.says)
			} else {
				assert.Equal(t, row.class, st.Class)
				assert.Contains(t, st.Reason, row.says)
			}
			live, _ := get(t, url+health.LivePath)
			assert.Equal(t, http.StatusOK, live, "liveness: a restart cannot help, or not yet")
			ready, body := get(t, url+health.ReadyPath)
			wantReady := map[bool]int{true: http.StatusOK, false: http.StatusServiceUnavailable}[strings.HasPrefix(row.ready, "200")]
			assert.Equal(t, wantReady, ready, body)
			assert.Equal(t, strings.Contains(row.ready, "degraded"), st.Degraded)
			if row.class == "needs-operator" {
				code, body := get(t, url+"/v1/draw?n=4")
				assert.Equal(t, http.StatusServiceUnavailable, code, "never served around on the CPU: %s", body)
			}
		})
	}
}

// TestAListThatLeavesTheDriverNoDeviceIsNoGPU: with GPU device nodes there,
// a visibility list that leaves the driver no device, as the driver reads it,
// is no-gpu: served on the CPU, never retried as not-yet, since no restart
// changes a variable. The fake drivers do not read such lists, so each host
// has its fake answer 100, as the real driver does.
func TestAListThatLeavesTheDriverNoDeviceIsNoGPU(t *testing.T) {
	t.Parallel() // beside the package's other servers, mostly waiting too
	for _, tc := range []struct {
		name  string
		host  func(t *testing.T) ([]string, []string)
		value string // the variable, as set
	}{
		{"CUDA: a repeat", nvidiaNoDevice(1), "CUDA_VISIBLE_DEVICES=0,0"},
		{"CUDA: a negative index", nvidiaNoDevice(1), "CUDA_VISIBLE_DEVICES=-2"},
		{"CUDA: a name", nvidiaNoDevice(1), "CUDA_VISIBLE_DEVICES=gpu0"},
		{"CUDA: GPU- on a host of two GPUs", nvidiaNoDevice(2), "CUDA_VISIBLE_DEVICES=GPU-"},
		{"CUDA: MIG- and no UUID", nvidiaNoDevice(1), "CUDA_VISIBLE_DEVICES=MIG-unknown"},
		{"ROCm: a negative index", amdNoDevice, "HIP_VISIBLE_DEVICES=-2"},
		{"ROCm: a name to ROCr", amdNoDevice, "ROCR_VISIBLE_DEVICES=gpu0"},
		{"ROCm: GPU- to ROCr", amdNoDevice, "ROCR_VISIBLE_DEVICES=GPU-"},
		{"ROCm: CUDA_VISIBLE_DEVICES as HIP reads it", amdNoDevice, "CUDA_VISIBLE_DEVICES=-2"},
	} {
		t.Run(tc.name+": "+tc.value, func(t *testing.T) {
			t.Parallel() // servers over their own fakes, mostly waiting
			env, args := tc.host(t)
			url, _, _ := startBinary(t, childtest.Program(t), append(env, tc.value), args...)
			get(t, url+health.ReadyPath) // the first readiness probe starts init
			st := waitForState(t, url, "failed")
			name, value, _ := strings.Cut(tc.value, "=")
			assert.Equal(t, "no-gpu", st.Class, st.Reason)
			assert.Contains(t, st.Reason, fmt.Sprintf("(no-gpu: %s=%q hides every GPU)", name, value))
			assert.True(t, st.Degraded, "served on the CPU")
			if st.BringUp != nil {
				assert.Equal(t, 1, st.BringUp.Attempts, "never retried")
			}
		})
	}
}

// nvidiaNoDevice is an NVIDIA host with nodes GPU device nodes and the
// module loaded, whose fake libcuda answers 100.
func nvidiaNoDevice(nodes int) func(t *testing.T) ([]string, []string) {
	return func(t *testing.T) ([]string, []string) {
		env := nvidiaHost(t, true, true)
		for _, kv := range env {
			if dev, ok := strings.CutPrefix(kv, "GPUINIT_DEV_ROOT="); ok {
				for i := 1; i < nodes; i++ {
					require.NoError(t, os.WriteFile(filepath.Join(dev, fmt.Sprintf("nvidia%d", i)), nil, 0o644))
				}
			}
		}
		return append(env, "GPUINIT_FAKE_CUDA_INIT=100"), []string{"-backend", "cuda"}
	}
}

// amdNoDevice is an AMD host given /dev/kfd, whose fake HIP answers 100.
func amdNoDevice(t *testing.T) ([]string, []string) {
	return append(amdHost(t, true), "GPUINIT_FAKE_HIP_INIT=100"), []string{"-backend", "hip"}
}

// placeOf puts the binary at bin into a folder of t's, as a hard link.
// A copy written here failed to start one run in twenty under load with
// "text file busy": a child that a parallel test forked at that moment held
// the copy's write descriptor until it ran exec. A link is never open for
// writing. Where the folder is on another file system, it copies.
func placeOf(t *testing.T, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server")
	if os.Link(bin, path) == nil {
		return path
	}
	in, err := os.Open(bin)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return path
}
