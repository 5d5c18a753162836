package preflight

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The stderr of children that died, as the Go runtime wrote it, with the
// build machine's absolute paths in it.
const (
	simPanic = `panic: sim: simulated driver panic in Init

goroutine 1 [running]:
github.com/gpuinit/gpuinit/device/sim.(*Backend).Init(0x808636?, {0x83a658?, 0xb674e0?})
	/home/build/src/gpuinit/device/sim/sim.go:188 +0xc85
github.com/gpuinit/gpuinit/device.checkBackend(0xb45b20, {0x8d5c4828018, 0x3})
	/home/build/src/gpuinit/device/preflight_child.go:50 +0x210
github.com/gpuinit/gpuinit/device/internal/preflight.Serve(0x831ca0)
	/home/build/src/gpuinit/device/internal/preflight/serve.go:33 +0x1af
github.com/gpuinit/gpuinit/device/backends.init.0()
	/home/build/src/gpuinit/device/backends/backends.go:28 +0x1a
`
	// GOTRACEBACK=crash: the runtime's frames are shown, each file line
	// carries fp, sp and pc, and the runtime ends the child with SIGABRT.
	simPanicTracebackCrash = `panic: sim: simulated driver panic in Init

goroutine 1 gp=0x97983e781e0 m=0 mp=0xb479a0 [running]:
panic({0x7829e0?, 0x835a80?})
	/usr/local/go/src/runtime/panic.go:879 +0x16f fp=0x97983f6d6f0 sp=0x97983f6d640 pc=0x485dcf
github.com/gpuinit/gpuinit/device/sim.(*Backend).Init(0x808636?, {0x83a658?, 0xb674e0?})
	/home/build/src/gpuinit/device/sim/sim.go:188 +0xc85 fp=0x97983f6d840 sp=0x97983f6d6f0 pc=0x6e5045
github.com/gpuinit/gpuinit/device.checkBackend(0xb45b20, {0x97983e8e018, 0x3})
	/home/build/src/gpuinit/device/preflight_child.go:50 +0x210 fp=0x97983f6dbd8 sp=0x97983f6d840 pc=0x6b5810
`
	nestedPanicInMain = `panic: first
	panic: second

goroutine 1 [running]:
main.main.func1()
	/tmp/x/main.go:17 +0x3b
panic({0x492de0?, 0x4b3c50?})
	/usr/local/go/src/runtime/panic.go:860 +0x13a
main.T.boom(...)
	/tmp/x/main.go:10
main.main()
	/tmp/x/main.go:18 +0x145
`
	nilDereferenceInTest = `panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x9d3b8c]

goroutine 1 [running]:
github.com/gpuinit/gpuinit/device_test.misbehave()
	/home/build/src/gpuinit/device/preflight_test.go:50 +0x6c
github.com/gpuinit/gpuinit/device_test.TestMain(0xc0001a6000)
	/home/build/src/gpuinit/device/preflight_test.go:35 +0x2c
main.main()
	_testmain.go:241 +0xa8
`
	panicInModuleCache = `panic: yaml: bad indent

goroutine 7 [running]:
gopkg.in/yaml.v3.handleErr(0xc000012345)
	/root/go/pkg/mod/gopkg.in/yaml.v3@v3.0.1/yaml.go:294 +0x6d
`
	// A fault in C code, in a cgo call: no panic, a signal.
	cCrashInCuInit = `SIGSEGV: segmentation violation
PC=0x7fc3b09c070c m=0 sigcode=1 addr=0x0
signal arrived during cgo execution

goroutine 1 gp=0x190d3303c1e0 m=0 mp=0xb479a0 [syscall, locked to thread]:
runtime.cgocall(0x751d10, 0x190d3316d528)
	/usr/local/go/src/runtime/cgocall.go:167 +0x4b fp=0x190d3316d500 sp=0x190d3316d4c8 pc=0x4834cb
github.com/gpuinit/gpuinit/device/cuda._Cfunc_gpuinit_cuInit()
	_cgo_gotypes.go:468 +0x45 fp=0x190d3316d528 sp=0x190d3316d500 pc=0x6cc625
github.com/gpuinit/gpuinit/device/cuda.init.func4()
	/home/build/src/gpuinit/device/cuda/calls.go:44 +0x13 fp=0x190d3316d540 sp=0x190d3316d528 pc=0x6c7bd3
`
	unexpectedSignal = `fatal error: unexpected signal during runtime execution
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x7f1a2b3c4d5e]

runtime stack:
runtime.throw({0x7d1234?, 0x0?})
	/usr/local/go/src/runtime/panic.go:1101 +0x48 fp=0x7ffd sp=0x7ffc pc=0x43a1c8

goroutine 1 gp=0xc000002380 m=0 mp=0xb479a0 [syscall]:
runtime.cgocall(0x751d10, 0xc00005d528)
	/usr/local/go/src/runtime/cgocall.go:167 +0x4b fp=0xc00005d500 sp=0xc00005d4c8 pc=0x4834cb
github.com/gpuinit/gpuinit/device/hip._Cfunc_gpuinit_hipInit(0x0)
	_cgo_gotypes.go:301 +0x45 fp=0xc00005d528 sp=0xc00005d500 pc=0x6cc625
`
)

// absolutePath finds a file path from the root, as a build machine's.
var absolutePath = regexp.MustCompile(`(^|[\s(])/[^\s]*\.(go|s)\b`)

func TestADeathIsNamedByTheRuntimesReportAndTheFrameThatFailed(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		want         death
	}{
		{"a panic in a backend's Init", simPanic, death{Report: "panic: sim: simulated driver panic in Init", Panicked: true,
			Frame: "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188"}},
		{"the same panic under GOTRACEBACK=crash: the runtime's panic frame is passed over", simPanicTracebackCrash,
			death{Report: "panic: sim: simulated driver panic in Init", Panicked: true,
				Frame: "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188"}},
		{"a panic in a deferred call: both panics, and the frame that panicked last", nestedPanicInMain,
			death{Report: "panic: first | panic: second", Panicked: true, Frame: "main.main.func1 at main.go:17"}},
		{"a nil dereference in Go code is a panic, its signal line dropped", nilDereferenceInTest,
			death{Report: "panic: runtime error: invalid memory address or nil pointer dereference", Panicked: true,
				Frame: "device_test.misbehave at github.com/gpuinit/gpuinit/device/preflight_test.go:50"}},
		{"a panic in a module from the module cache", panicInModuleCache,
			death{Report: "panic: yaml: bad indent", Panicked: true, Frame: "yaml.v3.handleErr at gopkg.in/yaml.v3@v3.0.1/yaml.go:294"}},
		{"a fault in C code is a signal, in the C call", cCrashInCuInit,
			death{Report: "SIGSEGV: segmentation violation | signal arrived during cgo execution",
				Frame: "cuda._Cfunc_gpuinit_cuInit at github.com/gpuinit/gpuinit/device/cuda/_cgo_gotypes.go:468", Call: "cuInit"}},
		{"a fatal signal in C on a Go thread", unexpectedSignal,
			death{Report: "fatal error: unexpected signal during runtime execution | [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x7f1a2b3c4d5e]",
				Frame: "hip._Cfunc_gpuinit_hipInit at github.com/gpuinit/gpuinit/device/hip/_cgo_gotypes.go:301", Call: "hipInit"}},
		{"a driver's own words are no Go report", "NVRM: GPU at PCI:0000:3b:00 has fallen off the bus\n", death{}},
		{"nothing at all (SIGKILL)", "", death{}},
		{"a panic whose stacks were cut off", "panic: boom\n", death{Report: "panic: boom", Panicked: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseDeath(tc.stderr)
			assert.Equal(t, tc.want, got)
			assert.NotRegexp(t, absolutePath, got.Frame+" "+got.Report, "no build machine's path")
		})
	}
}

func TestADeathsReportAndFrameAreBounded(t *testing.T) {
	long := strings.Repeat("é", 500)
	d := parseDeath("panic: " + long + "\n\ngoroutine 1 [running]:\nexample.com/m.F" + long + "()\n\t/src/m/f.go:1 +0x1\n")
	assert.True(t, d.Panicked)
	assert.LessOrEqual(t, len(d.Report), maxDeathReport)
	assert.LessOrEqual(t, len(d.Frame), maxFrame)
	assert.True(t, strings.HasSuffix(d.Report, "…") && strings.HasSuffix(d.Frame, "…"), "the cut is marked")
	assert.True(t, strings.HasPrefix(d.Report, "panic: éé"))
	assert.Equal(t, strings.ToValidUTF8(d.Report, "?"), d.Report, "cut on a rune boundary")
}
