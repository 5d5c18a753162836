package loader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuinit/gpuinit/device/driver"
)

// loadNamed loads the file spec.Env names. The user named it, so the advice
// is about that file: never to install the driver. The failure's Op names
// the variable ("dlopen GPUINIT_CUDA_LIBRARY"), and its message the file.
// Where the process already has the library (a cgo engine loaded one), a
// different file is refused, since two copies of a GPU runtime in one
// process break both; the same file is used.
func loadNamed(l opener, spec Spec, file string) (Library, error) {
	named := spec.Env + "=" + file
	op := "dlopen " + spec.Env // says whose file it was, for the failure's class
	for _, name := range spec.Names {
		h, path, _ := l.Open(name, true)
		if h == nil {
			continue
		}
		if sameFile(path, file) {
			return Library{Handle: h, Path: path, Preloaded: true, Named: named}, nil
		}
		return Library{}, &driver.DriverError{Backend: spec.Backend, Op: op, Sentinel: driver.ErrDriverMismatch,
			Message: fmt.Sprintf("%s is a second %s, but this process already has %s (a cgo engine loaded it); two copies of one GPU runtime in a process break both", file, name, path),
			Hint:    fmt.Sprintf("unset %s, or point it at %s", spec.Env, path)}
	}
	// A bare name ("libcuda.so.1") is for the loader's search; a path must
	// be there.
	if _, err := os.Stat(file); err != nil && strings.Contains(file, "/") {
		return Library{}, &driver.DriverError{Backend: spec.Backend, Op: op, Sentinel: driver.ErrDriverNotFound,
			Message: err.Error(), // "stat <file>: no such file or directory"
			Hint:    fmt.Sprintf("%s names a file that is not there: point it at %s (ldconfig -p shows where the loader finds it), or unset it", spec.Env, spec.Names[0])}
	}
	h, path, msg := l.Open(file, false)
	if h == nil {
		if dep := missingDependency(msg, file); dep != "" {
			return Library{}, brokenInstall(spec, named, dep, msg)
		}
		// dlerror mostly begins with the file; the message names it once.
		return Library{}, &driver.DriverError{Backend: spec.Backend, Op: op, Sentinel: driver.ErrDriverMismatch,
			Message: file + ": " + strings.TrimPrefix(msg, file+": "),
			Hint:    fmt.Sprintf("point %s at a %s this process can load, or unset it", spec.Env, spec.Names[0])}
	}
	return Library{Handle: h, Path: path, Named: named}, nil
}

// sameFile reports whether two paths name one file, through links.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return false
	}
	if ra == rb {
		return true
	}
	sa, errA := os.Stat(ra)
	sb, errB := os.Stat(rb)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// missingDependency returns the library dlerror's text says is missing when
// it is not the file asked for ("libhsa-runtime64.so.1: cannot open shared
// object file" for libamdhip64.so.5): the file was found, one it needs was
// not. "" otherwise.
func missingDependency(msg, asked string) string {
	lib, rest, ok := strings.Cut(msg, ": cannot open shared object file")
	if !ok || rest == "" && lib == "" {
		return ""
	}
	lib = strings.TrimSpace(lib)
	if i := strings.LastIndex(lib, ": "); i >= 0 { // "path: dep: cannot open ..."
		lib = strings.TrimSpace(lib[i+2:])
	}
	if lib == "" || filepath.Base(lib) == filepath.Base(asked) || lib == asked {
		return ""
	}
	return lib
}

// brokenInstall is the error for a library found whose dependency could not
// be loaded: the runtime is installed, but not whole, which is for an
// operator to fix, not a missing runtime.
func brokenInstall(spec Spec, found, dep, msg string) error {
	return &driver.DriverError{Backend: spec.Backend, Op: "dlopen", Sentinel: driver.ErrDriverMismatch,
		Message: fmt.Sprintf("found %s, but it needs %s, which could not be loaded: %s", found, dep, msg),
		Hint:    fmt.Sprintf("install the package that ships %s, or add its directory to LD_LIBRARY_PATH (some distributions' builds have no RUNPATH to find it)", dep)}
}

// CheckFile is the check of env, a variable that names a library file
// (want, such as libcuda.so.1), for a registration's driver.EnvVar: a path
// must be a file that is there; a bare name is left to the loader's search.
func CheckFile(env, want string) func(string) error {
	return func(file string) error {
		if !strings.Contains(file, "/") {
			return nil
		}
		if info, err := os.Stat(file); err != nil || info.IsDir() {
			return fmt.Errorf("device: %s=%q names no file: point it at %s (ldconfig -p shows where the loader finds it), or unset it: %w",
				env, file, want, driver.ErrBadSetting)
		}
		return nil
	}
}
