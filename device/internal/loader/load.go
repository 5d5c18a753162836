package loader

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
)

// Handle is what dlopen returned.
type Handle = unsafe.Pointer

// opener is dlopen: Open loads name with RTLD_NOW|RTLD_LOCAL, or with noload
// only if the process has it already (RTLD_NOLOAD), and returns the handle
// and the file loaded; on failure a nil handle and dlerror's text, read in
// the same C call.
type opener interface {
	Open(name string, noload bool) (h Handle, path, errText string)
}

// Spec says what to load.
type Spec struct {
	Backend string   // the backend's name, for errors: "cuda"
	Names   []string // candidate file names, best first: "libcuda.so.1"
	Prefer  []string // directories to try before the loader's own search
	Dirs    []string // directories to try after the loader's own search
	Env     string   // the variable that names a file to use instead
	Hint    string   // what to do when nothing loads
	// Identity is a function every version of the library has
	// (cuDriverGetVersion): a file without it is not this library at all.
	Identity string
}

// Library is a loaded library.
type Library struct {
	Handle    Handle
	Path      string // the file loaded, as the dynamic loader knows it
	Preloaded bool   // the process had it before this load
	Named     string // "VAR=file" when the variable named the file, else ""
}

// load finds and loads the library spec describes through l; see Load.
func load(l opener, spec Spec) (Library, error) {
	if file := strings.TrimSpace(os.Getenv(spec.Env)); file != "" {
		return loadNamed(l, spec, file)
	}
	for _, name := range spec.Names {
		if h, path, _ := l.Open(name, true); h != nil {
			return Library{Handle: h, Path: path, Preloaded: true}, nil
		}
	}
	var first string
	var tried []string
	var brokenErr error // a library found whose dependency is missing
	inDirs := func(dirs []string) (Library, bool) {
		for _, dir := range dedupe(dirs) {
			for _, name := range spec.Names {
				file := filepath.Join(dir, name)
				if _, err := os.Stat(file); err != nil {
					continue
				}
				h, path, msg := l.Open(file, false)
				if h != nil {
					return Library{Handle: h, Path: path}, true
				}
				if dep := missingDependency(msg, file); dep != "" && brokenErr == nil {
					brokenErr = brokenInstall(spec, file, dep, msg)
				}
				tried = append(tried, file+": "+msg)
			}
		}
		return Library{}, false
	}
	if lib, ok := inDirs(spec.Prefer); ok {
		return lib, nil
	}
	for _, name := range spec.Names {
		h, path, msg := l.Open(name, false)
		if h != nil {
			return Library{Handle: h, Path: path}, nil
		}
		if first == "" {
			first = msg
		}
		if dep := missingDependency(msg, name); dep != "" && brokenErr == nil {
			brokenErr = brokenInstall(spec, name, dep, msg)
		}
	}
	if lib, ok := inDirs(spec.Dirs); ok {
		return lib, nil
	}
	where := strings.Join(spec.Names, ", ") + " through the loader's search"
	if dirs := dedupe(append(slices.Clone(spec.Prefer), spec.Dirs...)); len(dirs) > 0 {
		where += " and in " + strings.Join(dirs, ", ")
	}
	if brokenErr != nil {
		return Library{}, brokenErr
	}
	if len(tried) > 0 {
		first += "; " + strings.Join(tried, "; ")
	}
	return Library{}, notFound(spec, first, where)
}

func notFound(spec Spec, msg, tried string) error {
	return &driver.DriverError{Backend: spec.Backend, Op: "dlopen", Sentinel: driver.ErrDriverNotFound,
		Message: spec.Names[0] + " not found", Detail: msg + " (tried " + tried + ")", Hint: spec.Hint}
}

// missingSymbol is the error for a library that lacks a function the backend
// needs, wrapping driver.ErrDriverMismatch and naming the function in Op
// ("dlsym cuDeviceTotalMem_v2"; Name is left for a code's name, and a
// missing function has no code). A library without spec.Identity is not the
// vendor's library at all: the advice is then about the file, not the
// driver's age.
func missingSymbol(spec Spec, lib Library, symbol, msg, upgrade string) error {
	de := &driver.DriverError{Backend: spec.Backend, Op: "dlsym " + symbol, Sentinel: driver.ErrDriverMismatch,
		Message: fmt.Sprintf("%s lacks %s: %s", lib.Path, symbol, msg), Hint: upgrade}
	if symbol == spec.Identity {
		de.Message = fmt.Sprintf("%s is not %s: it has no %s, which every version of %s has", lib.Path, spec.Names[0], symbol, spec.Names[0])
		de.Hint = "point " + spec.Env + " at the driver's " + spec.Names[0] + ", or unset it"
		if lib.Named == "" {
			de.Hint = "the file the loader found as " + spec.Names[0] + " is another library: check LD_LIBRARY_PATH and the loader's cache (ldconfig -p), or set " + spec.Env
		}
	} else if lib.Named != "" {
		de.Hint += " (or, if " + lib.Named + " names an older copy than the one installed, point " + spec.Env + " at the newer one)"
	}
	return de
}

// Dirs returns the directories to try after the loader's search, in order,
// skipping empty entries: each of roots joined with sub (so "$ROCM_PATH" and
// "lib" give "$ROCM_PATH/lib"), then fixed.
func Dirs(roots []string, sub string, fixed ...string) []string {
	var dirs []string
	for _, r := range roots {
		if r = strings.TrimSpace(r); r != "" {
			dirs = append(dirs, filepath.Join(r, sub))
		}
	}
	return append(dirs, fixed...)
}

func dedupe(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
