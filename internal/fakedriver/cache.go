package fakedriver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The fakes compile once per machine, not once per test binary. Four test
// binaries build the same libraries, and a compile costs about a quarter of a
// second of CPU. So a compiled library is kept in the user's cache folder,
// as the go command keeps its builds, named by a hash of everything that
// makes it: the sources and headers, the flags, and the compiler's file.
// A change to any of them makes a new name, so a stale library is never
// used. Tests get a copy, never the cached file itself, so that nothing a
// test does to its file reaches the next run.

// cacheRoot is the folder the compiled fakes are kept in. It is "" where the
// user has no cache folder: each test binary then compiles its own.
var cacheRoot = func() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "gpuinit-fakedriver")
}()

// elfMagic starts every shared library this package builds.
var elfMagic = []byte("\x7fELF")

// compileCached puts lib, compiled with cc, into dir and returns its path
// there. It copies the cached library where one is kept, and compiles and
// keeps it otherwise. A cache it cannot read or write only costs a compile.
func compileCached(cc, dir string, lib Library) (string, error) {
	key, err := cacheKey(cc, lib)
	if err != nil || cacheRoot == "" {
		return compile(cc, dir, lib)
	}
	kept := filepath.Join(cacheRoot, key, lib.Soname)
	if b, err := os.ReadFile(kept); err == nil && bytes.HasPrefix(b, elfMagic) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		out := filepath.Join(dir, lib.Soname)
		return out, os.WriteFile(out, b, 0o755)
	}
	out, err := compile(cc, dir, lib)
	if err == nil {
		keep(out, kept)
	}
	return out, err
}

// keep copies the compiled library at from to the cache's path to, through
// a temporary file and a rename: another test binary that compiles the same
// library at once, or reads it, never sees half a file. It fails silently.
func keep(from, to string) {
	b, err := os.ReadFile(from)
	if err != nil || os.MkdirAll(filepath.Dir(to), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), "partial-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Chmod(tmp.Name(), 0o755) != nil ||
		os.Rename(tmp.Name(), to) != nil {
		os.Remove(tmp.Name())
	}
}

// cacheKey names lib as cc would compile it now: a hash of its source, every
// header, its soname and defines, the flags, and the compiler's resolved
// path, size and modification time.
func cacheKey(cc string, lib Library) (string, error) {
	h := sha256.New()
	path, err := exec.LookPath(cc)
	if err != nil {
		return "", err
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return "", err
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "cc %s %d %d\nflags %q\n", path, info.Size(), info.ModTime().UnixNano(), compileFlags)
	fmt.Fprintf(h, "lib %s %s %s\n", lib.Source, lib.Soname, strings.Join(lib.Defines, " "))
	files, _ := fs.Glob(sources, "csrc/*.h")
	for _, name := range append(files, "csrc/"+lib.Source) {
		b, err := sources.ReadFile(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}
