package backends_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends"
	"github.com/gpuinit/gpuinit/device/cuda"
	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/gpuinit/gpuinit/device/hip"
	"github.com/gpuinit/gpuinit/device/sim"
)

// theLine is the README's first program's handling of a host without a
// usable GPU (examples/minimal), which TestTheREADMEsNoGPULineRunsHere runs.
const theLine = "case device.FallBackToCPU(err): // no GPU here"

// TestTheREADMEsNoGPULineRunsHere makes the README program's decision on
// this machine, over every backend the build has and the preflight on (this
// test binary is its children, served by the package's init): on a machine
// without a GPU (CI's), device.FallBackToCPU says so, whatever the backends
// found (no library, no device, no cgo); on one with, Init works.
func TestTheREADMEsNoGPULineRunsHere(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), theLine) {
		t.Fatalf("README.md's first program no longer has %q", theLine)
	}
	t.Setenv("GPUINIT_BACKEND", "")
	rt, err := device.Open("")
	if err != nil {
		t.Fatal(err)
	}
	// A fresh Runtime for the next run (-count): Open after Shutdown makes one.
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	if err := rt.UsePreflight(device.Preflight{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	servedOnCPU, unready := false, false
	serveOnCPU := func() { servedOnCPU = true }
	stayUnready := func(error) { unready = true }
	_, err = rt.DeviceCount(ctx)
	switch { // the README program's decision: the CPU for no GPU, unready for any other failure
	case device.FallBackToCPU(err):
		serveOnCPU()
	case err != nil:
		stayUnready(err)
	}
	switch {
	case err == nil:
		t.Logf("this machine has a usable GPU: %s", rt.Name())
	case unready:
		t.Fatalf("this machine has a GPU that is broken or not ready (%s), or FallBackToCPU missed a host without one: %v", device.ClassOf(err), err)
	case !servedOnCPU:
		t.Fatalf("an initialization failure that FallBackToCPU missed: %v", err)
	default:
		t.Logf("no usable GPU here (%s): %v", device.ClassOf(err), err)
		if errors.Is(err, context.Canceled) {
			t.Error("a cancellation is no reason to serve on the CPU")
		}
	}
}

// settingsTable renders device.DefaultRegistry.Settings, with every shipped
// backend registered, as README.md's section "Settings: the GPUINIT_*
// variables" prints it.
func settingsTable(t *testing.T) string {
	t.Helper()
	owner := map[string]string{}
	for _, reg := range []driver.Registration{cuda.Registration(), hip.Registration(), sim.Registration()} {
		for _, v := range reg.Env {
			owner[v.Name] = reg.Name
		}
	}
	var b strings.Builder
	b.WriteString("| variable | read by | what it sets | when unset |\n| --- | --- | --- | --- |\n")
	for _, v := range device.DefaultRegistry.Settings() {
		by := owner[v.Name]
		if by == "" {
			by = "device"
		}
		for _, cell := range []string{v.Doc, v.Default} {
			if cell == "" || strings.ContainsAny(cell, "|\n") {
				t.Errorf("%s: %q cannot be a cell of the README's table", v.Name, cell)
			}
		}
		b.WriteString("| `" + v.Name + "` | " + by + " | " + v.Doc + " | " + v.Default + " |\n")
	}
	return b.String()
}

// TestTheREADMEPrintsTheSettingsTable keeps README.md's table of the
// GPUINIT_* variables exactly the code's one table of them.
func TestTheREADMEPrintsTheSettingsTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Settings: the GPUINIT_* variables\n"
	_, section, found := strings.Cut(string(readme), heading)
	if !found {
		t.Fatalf("README.md has no section %q", strings.TrimSpace(heading))
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var printed []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			printed = append(printed, line)
		}
	}
	want := settingsTable(t)
	if got := strings.Join(printed, "\n") + "\n"; got != want {
		t.Errorf("README.md's section %q does not print the settings as the code has them "+
			"(device's deviceEnv and each Registration's Env); replace its table with this:\n\n%s", strings.TrimSpace(heading), want)
	}
}

// FuzzSettingChecks checks each GPUINIT_* variable's Check, as Open calls it,
// on any value: the same answer every time, a refusal wrapping
// device.ErrBadSetting and naming the variable, and sim's Check refusing
// exactly what sim's Open refuses.
func FuzzSettingChecks(f *testing.F) {
	for i, v := range []string{"auto", "30s", "off", "/dev", "/nonexistent", "libcuda.so.1", "/x.so", "10s", "-1s", "2", "65", "250ms", "hang", "bogus"} {
		f.Add(uint8(i), v)
	}
	settings := device.DefaultRegistry.Settings()
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		v := settings[int(which)%len(settings)]
		if strings.ContainsRune(value, 0) {
			return // no environment holds a NUL
		}
		t.Setenv(v.Name, value)
		trimmed := strings.TrimSpace(value)
		if trimmed == "" || v.Check == nil {
			return // Open checks neither
		}
		err := v.Check(trimmed)
		if again := v.Check(trimmed); fmt.Sprint(err) != fmt.Sprint(again) {
			t.Fatalf("%s=%q: %v, then %v", v.Name, value, err, again)
		}
		if err != nil && (!errors.Is(err, device.ErrBadSetting) || !strings.Contains(err.Error(), v.Name)) {
			t.Fatalf("%s=%q: %v", v.Name, value, err)
		}
		if strings.HasPrefix(v.Name, "GPUINIT_SIM_") {
			if _, simErr := sim.OptionsFromEnv(); (simErr == nil) != (err == nil) {
				t.Fatalf("%s=%q: the check says %v, sim's Open %v", v.Name, value, err, simErr)
			}
		}
	})
}
