package host

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// KernelsCover reports whether dir, a rocBLAS kernel directory (a ROCm or
// bundled lib/rocblas/library, or what ROCBLAS_TENSILE_LIBPATH names), covers
// a GPU of the gfx target version target, and found lists every target it
// holds Tensile files for, sorted, in target-id form: "gfx90a",
// "gfx90a:xnack-", "gfx11-generic".
//
// Coverage follows rocBLAS's own lookup (initialize in ROCm/rocBLAS
// library/src/tensile_host.cpp): in dir/<target> when that directory exists
// (the per-target layout of multi-target ROCm 7 builds), else in dir, the
// first of TensileLibrary_lazy_<target>.dat, TensileLibrary_<target>.dat (the
// lazy and eager per-target indexes Tensile writes) and TensileLibrary.dat,
// the one index of a build whose targets were not separated, which covers the
// target only with code objects for it beside it (rocBLAS loads
// "*<target>*co"). .yaml stands for .dat in a YAML-format build. Target
// features do not count: rocBLAS strips ":sramecc+:xnack-" from the device's
// name, and Tensile writes source kernels for each xnack mode
// (..._gfx90a-xnack-.hsaco) under one index.
//
// A generic target also covers its family (GenericGfxTarget): an index for
// gfx11-generic covers gfx1103. Stock rocBLAS looks only for the device's own
// name, but only a rocBLAS built with generic targets writes such an index,
// and that rocBLAS looks for it. ollama judges coverage more narrowly, by
// TensileLibrary_lazy_<target>.dat directly in rocblas/library alone.
//
// An unreadable directory is an error naming it (wrapping os.ErrNotExist when
// it is missing); so is a target version that names no target.
func KernelsCover(dir string, target int) (covered bool, found []string, err error) {
	name := GfxTargetName(target)
	if name == "" {
		return false, nil, fmt.Errorf("kfd: kernels in %s: gfx target version %d names no target", dir, target)
	}
	files, err := readNames(dir)
	if err != nil {
		return false, nil, err
	}
	seen := map[string]bool{}
	for _, f := range files {
		if f.IsDir() {
			if _, ok := targetID(f.Name()); !ok {
				continue
			}
			sub, err := readNames(filepath.Join(dir, f.Name()))
			if err != nil {
				return false, nil, err
			}
			for _, s := range sub {
				if t, ok := tensileTarget(s.Name()); ok && !s.IsDir() {
					seen[t] = true
				}
			}
		} else if t, ok := tensileTarget(f.Name()); ok {
			seen[t] = true
		}
	}
	for t := range seen {
		found = append(found, t)
	}
	sort.Strings(found)
	for _, want := range []string{name, GenericGfxTarget(target)} {
		if want == "" {
			continue
		}
		ok, err := rocblasCovers(dir, want)
		if err != nil || ok {
			return ok, found, err
		}
	}
	return false, found, nil
}

// rocblasCovers is rocBLAS's lookup of the index for the target named want.
func rocblasCovers(dir, want string) (bool, error) {
	path := dir
	if st, err := os.Stat(filepath.Join(dir, want)); err == nil && st.IsDir() {
		path = filepath.Join(dir, want)
	}
	for _, ext := range []string{".dat", ".yaml"} {
		for _, index := range []string{"TensileLibrary_lazy_" + want + ext, "TensileLibrary_" + want + ext} {
			if isFile(filepath.Join(path, index)) {
				return true, nil
			}
		}
	}
	if !isFile(filepath.Join(path, "TensileLibrary.dat")) && !isFile(filepath.Join(path, "TensileLibrary.yaml")) {
		return false, nil
	}
	files, err := readNames(path)
	if err != nil {
		return false, err
	}
	for _, f := range files {
		n := f.Name()
		if !f.IsDir() && strings.HasSuffix(n, "co") && strings.Contains(n, want) {
			return true, nil
		}
	}
	return false, nil
}

// readNames lists a kernel directory, with an error that names it.
func readNames(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kfd: reading kernel directory %s: %w", dir, err)
	}
	return entries, nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// tensileExts are the extensions of the files Tensile writes for rocBLAS:
// indexes (.dat, .yaml), assembly code objects (.co) and source kernels
// (.hsaco).
var tensileExts = []string{".dat", ".yaml", ".hsaco", ".co"}

// tensileTarget reads the target a Tensile file is for from its name, such
// as TensileLibrary_lazy_gfx90a.dat, TensileLibrary_gfx908.co or
// TensileLibrary_Type_SS_Contraction_..._fallback_gfx90a-xnack-.hsaco: the
// last "gfx" after a '_' or '-', to the extension.
func tensileTarget(file string) (string, bool) {
	if !strings.HasPrefix(file, "TensileLibrary") {
		return "", false
	}
	for _, ext := range tensileExts {
		if stem, ok := strings.CutSuffix(file, ext); ok {
			i := strings.LastIndex(stem, "gfx")
			if i <= 0 || (stem[i-1] != '_' && stem[i-1] != '-') {
				return "", false
			}
			return targetID(stem[i:])
		}
	}
	return "", false
}

// targetIDPattern is a processor (a generic one first, so gfx9-generic is not
// read as gfx9) and its target features, each after ':' as LLVM writes them,
// '-' as Tensile writes them in file names, or '_'.
var (
	targetIDPattern = lazyRegexp(`^(gfx[0-9]+(?:-[0-9]+)?-generic|gfx[0-9][0-9a-f]+)((?:[-:_](?:xnack|sramecc)[+-])*)$`)
	featurePattern  = lazyRegexp(`(xnack|sramecc)([+-])`)
)

// targetID spells a target id as LLVM does, "gfx90a:xnack-", from any of the
// spellings targetIDPattern takes.
func targetID(s string) (string, bool) {
	m := targetIDPattern().FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	id := m[1]
	for _, f := range featurePattern().FindAllString(m[2], -1) {
		id += ":" + f
	}
	return id, true
}

// lazyRegexp compiles expr at its first use, not as the process starts:
// every process that links gpuinit runs this package's initialization,
// most never read a gfx target, and a preflight child's start is the
// preflight's cost.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
