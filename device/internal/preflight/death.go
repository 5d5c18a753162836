package preflight

import (
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// death is what a Go child's stderr says of how it died, read from the
// report the Go runtime prints before its goroutine stacks. The stacks'
// absolute file paths (the build machine's) are never kept: frames are named
// as -trimpath would print them.
type death struct {
	// Report is the runtime's own first lines: a panic's "panic: ..."
	// (nested panics and a value's further lines joined by " | "), "fatal
	// error: ...", or "SIGSEGV: segmentation violation" and what follows it
	// before the stacks, less the "PC=" line. It is "" where the child
	// printed no such report.
	Report string
	// Panicked reports a Go panic: code that ran in the child panicked.
	Panicked bool
	// Frame is the frame that panicked or crashed: the first frame of the
	// goroutine printed first (the one that failed) below the runtime's
	// own, as "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188".
	Frame string
	// Call is the C function the failing goroutine was in, as cgo names it
	// ("cuInit" for _Cfunc_gpuinit_cuInit), or "".
	Call string
}

// The bounds on what a death's fields keep of the child's stderr.
const (
	maxDeathReport = 160
	maxFrame       = 120
)

var (
	// runtimeReport is the first line of the Go runtime's report of a
	// death: a panic, a fatal error, or a signal it caught (a fault in C
	// code arrives so: "SIGSEGV: segmentation violation").
	runtimeReport = lazyRegexp(`^(panic: |fatal error: |SIG[A-Z]+: )`)
	// goroutineHeader starts a goroutine's stack: "goroutine 1 [running]:",
	// or with GOTRACEBACK=system "goroutine 1 gp=0x... m=0 mp=0x... [running]:".
	goroutineHeader = lazyRegexp(`^goroutine \d+ .*\[.*\]:$`)
)

// parseDeath reads how a Go child died from its stderr. A child that is not
// a Go program, or died without a word (SIGKILL), gives the zero death.
func parseDeath(stderr string) death {
	lines := strings.Split(stderr, "\n")
	start := -1
	for i, l := range lines {
		if runtimeReport().MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		return death{}
	}
	d := death{Panicked: strings.HasPrefix(lines[start], "panic: ")}
	var report []string
	i := start
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		l := strings.TrimSpace(lines[i])
		if (d.Panicked && strings.HasPrefix(l, "[signal ")) || strings.HasPrefix(l, "PC=") {
			continue // a Go fault's panic says what it was; a pc says nothing to a reader
		}
		report = append(report, l)
	}
	d.Report = bound(strings.Join(report, " | "), maxDeathReport)
	for ; i < len(lines); i++ {
		if goroutineHeader().MatchString(lines[i]) {
			d.Frame, d.Call = failingFrame(lines[i+1:])
			break
		}
	}
	return d
}

// failingFrame reads one goroutine's frames, each a function line and a
// tab-indented file line, up to the blank line that ends it. It returns the
// first frame below the runtime's own, and the C function of a cgo frame.
func failingFrame(lines []string) (frame, call string) {
	for i := 0; i+1 < len(lines) && lines[i] != ""; i++ {
		fn, file := lines[i], lines[i+1]
		if !strings.HasPrefix(file, "\t") {
			continue // not a frame: "...additional frames elided...", or a stray line
		}
		i++
		if strings.HasPrefix(fn, "created by ") {
			break
		}
		if call == "" {
			if m := cgoCall().FindStringSubmatch(fn); m != nil {
				call = m[1]
			}
		}
		if frame == "" && !runtimeFrame(fn) {
			frame = bound(nameFrame(fn, file), maxFrame)
		}
		if frame != "" && call != "" {
			break
		}
	}
	return frame, call
}

// runtimeFrame reports a frame of the runtime's own, which a panic or a
// signal passes through: "panic({...})", "runtime.gopanic(...)",
// "runtime.sigpanic()", "internal/runtime/syscall/linux.Syscall6()", or
// cgo's "runtime.cgocall(...)".
func runtimeFrame(fn string) bool {
	return strings.HasPrefix(fn, "panic(") || strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/")
}

// nameFrame names a frame from its two lines, as -trimpath would print it:
// "sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188".
// The function loses its arguments and its package's directory. The file is
// its package path and base name; its base name alone in package main, whose
// path a stack does not say; or, in the module cache, its module's path and
// version and the file in the module.
func nameFrame(fnLine, fileLine string) string {
	fn := fnLine
	if i := strings.LastIndex(fn, "("); i > 0 && strings.HasSuffix(fn, ")") {
		fn = fn[:i] // the arguments: "(0x808636?, {0x83a658?, 0xb674e0?})" or "(...)"
	}
	pkg := packagePath(fn)
	short := fn[strings.LastIndex(pkg, "/")+1:]
	file := strings.TrimSpace(fileLine)
	if i := strings.IndexByte(file, ' '); i >= 0 {
		file = file[:i] // " +0x1a", " fp=... sp=... pc=..."
	}
	where := path.Base(file) // "sim.go:188"
	_, inCache, cached := strings.Cut(file, "/pkg/mod/")
	switch dir := strings.TrimSuffix(pkg, "_test"); {
	case cached:
		where = inCache // "gopkg.in/yaml.v3@v3.0.1/yaml.go:294": the module's path and version
	case dir != "main" && dir != "":
		where = dir + "/" + where
	}
	return short + " at " + where
}

// packagePath is a function name's package path: up to the first dot after
// the last slash ("github.com/gpuinit/gpuinit/device/sim" of
// "github.com/gpuinit/gpuinit/device/sim.(*Backend).Init").
func packagePath(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// bound cuts s to at most n bytes, marking the cut, on a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// lazyRegexp compiles expr at its first use, not as the process starts:
// the patterns read a dead child's stderr, which most processes never see,
// and every preflight child starts by initializing this package.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
