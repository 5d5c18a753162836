package loader

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is an opener that loads only the files in ok and records the calls.
type recorder struct {
	ok    map[string]bool // name -> loadable; with a trailing "!", only already loaded
	calls []string
}

func (r *recorder) Open(name string, noload bool) (Handle, string, string) {
	call := name
	if noload {
		call += " (noload)"
	}
	r.calls = append(r.calls, call)
	if r.ok[name+"!"] || (!noload && r.ok[name]) {
		return Handle(&r.calls), "/loaded/" + name, ""
	}
	return nil, "", name + ": cannot open shared object file"
}

func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/libx.so.2", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Backend: "x", Names: []string{"libx.so.2", "libx.so.1"}, Dirs: []string{dir, "", dir}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x"}
	for _, tc := range []struct {
		name      string
		env       string
		ok        map[string]bool
		calls     []string
		path      string
		preloaded bool
	}{
		{"a library the process has wins", "", map[string]bool{"libx.so.1!": true, "libx.so.2": true},
			[]string{"libx.so.2 (noload)", "libx.so.1 (noload)"}, "/loaded/libx.so.1", true},
		{"then the loader's search, best name first", "", map[string]bool{"libx.so.1": true},
			[]string{"libx.so.2 (noload)", "libx.so.1 (noload)", "libx.so.2", "libx.so.1"}, "/loaded/libx.so.1", false},
		{"then the directories, files that exist only", "", map[string]bool{dir + "/libx.so.2": true},
			[]string{"libx.so.2 (noload)", "libx.so.1 (noload)", "libx.so.2", "libx.so.1", dir + "/libx.so.2"}, "/loaded/" + dir + "/libx.so.2", false},
		{"the variable names the only file tried, after a look for a loaded copy", "/opt/x/libx.so", map[string]bool{"libx.so.2": true},
			[]string{"libx.so.2 (noload)", "libx.so.1 (noload)"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(spec.Env, tc.env)
			r := &recorder{ok: tc.ok}
			lib, err := load(r, spec)
			if got, want := strings.Join(r.calls, "; "), strings.Join(tc.calls, "; "); got != want {
				t.Errorf("calls %q, want %q", got, want)
			}
			if tc.path == "" {
				if !errors.Is(err, driver.ErrDriverNotFound) || !strings.Contains(err.Error(), "dlopen DYNLOAD_TEST_LIBRARY failed: stat /opt/x/libx.so:") {
					t.Errorf("err = %v, want ErrDriverNotFound naming the variable and its file", err)
				}
				return
			}
			if err != nil || lib.Path != tc.path || lib.Preloaded != tc.preloaded {
				t.Errorf("Load = %+v, %v; want %s (preloaded %v)", lib, err, tc.path, tc.preloaded)
			}
		})
	}
	t.Run("nothing found: the name in the message, every name and directory in the detail", func(t *testing.T) {
		t.Setenv(spec.Env, "")
		_, err := load(&recorder{}, spec)
		var de *driver.DriverError
		if !errors.As(err, &de) || de.Op != "dlopen" || !errors.Is(err, driver.ErrDriverNotFound) || de.Hint != "install x" {
			t.Fatalf("err = %#v", err)
		}
		if de.Message != "libx.so.2 not found" {
			t.Errorf("message %q", de.Message)
		}
		for _, want := range []string{"libx.so.2: cannot open shared object file", "libx.so.2, libx.so.1 through the loader's search and in " + dir} {
			if !strings.Contains(de.Detail, want) {
				t.Errorf("detail %q lacks %q", de.Detail, want)
			}
			if strings.Contains(de.Error(), want) {
				t.Errorf("Error %q holds the detail %q: a message a person reads once", de.Error(), want)
			}
		}
	})
}

func TestTheNamedFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "libx.so.1")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	link := filepath.Join(dir, "libx-link.so")
	require.NoError(t, os.Symlink(file, link))
	spec := Spec{Backend: "x", Names: []string{"libx.so.1"}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x"}
	for _, tc := range []struct {
		name     string
		env      string
		opener   opener
		path     string
		sentinel error
		want     []string
	}{
		{"a second copy beside a loaded one is refused, naming both", file, &fixedOpener{loaded: "/usr/lib/libx.so.1", open: file},
			"", driver.ErrDriverMismatch, []string{"dlopen DYNLOAD_TEST_LIBRARY failed: " + file + " is a second libx.so.1", "already has /usr/lib/libx.so.1", "point it at /usr/lib/libx.so.1"}},
		{"the loaded copy itself, through a link, is used", link, &fixedOpener{loaded: file}, file, nil, nil},
		{"a file that is not there", filepath.Join(dir, "nope.so"), &fixedOpener{}, "", driver.ErrDriverNotFound,
			[]string{"dlopen DYNLOAD_TEST_LIBRARY failed: stat " + dir + "/nope.so: no such file", "names a file that is not there"}},
		{"a file the loader refuses is named once, with the loader's words", file, &fixedOpener{fail: file + ": invalid ELF header"},
			"", driver.ErrDriverMismatch, []string{"dlopen DYNLOAD_TEST_LIBRARY failed: " + file + ": invalid ELF header; point DYNLOAD_TEST_LIBRARY at a libx.so.1 this process can load, or unset it"}},
		{"a file whose dependency is missing", file, &fixedOpener{fail: "libdep.so.1: cannot open shared object file: No such file or directory"},
			"", driver.ErrDriverMismatch, []string{"it needs libdep.so.1, which could not be loaded", "install the package that ships libdep.so.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(spec.Env, tc.env)
			lib, err := load(tc.opener, spec)
			if tc.sentinel == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.path, lib.Path)
				assert.True(t, lib.Preloaded)
				return
			}
			require.ErrorIs(t, err, tc.sentinel)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "install x", "the user named the file")
			said, _, _ := strings.Cut(err.Error(), "; ") // what failed, before the advice
			assert.Equal(t, 1, strings.Count(said, spec.Env), "the variable is named once: %s", said)
			assert.Equal(t, 1, strings.Count(said, tc.env), "the file is named once: %s", said)
		})
	}
}

func TestAFoundLibraryWithAMissingDependencyIsABrokenInstall(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "libx.so.1")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	spec := Spec{Backend: "x", Names: []string{"libx.so.1"}, Dirs: []string{dir}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x, or set X_PATH"}
	t.Setenv(spec.Env, "")
	_, err := load(&fixedOpener{fail: "libhsa-runtime64.so.1: cannot open shared object file: No such file or directory",
		failOnly: file}, spec)
	require.ErrorIs(t, err, driver.ErrDriverMismatch, "a found runtime that cannot load is not a missing one")
	assert.Contains(t, err.Error(), "found "+file+", but it needs libhsa-runtime64.so.1")
	assert.NotContains(t, err.Error(), "set X_PATH")
}

// fixedOpener has loaded (for noload), opens open (or any name when open is
// ""), and fails the others with fail (only failOnly, when set).
type fixedOpener struct{ loaded, open, fail, failOnly string }

func (f *fixedOpener) Open(name string, noload bool) (Handle, string, string) {
	if noload {
		if f.loaded != "" {
			return Handle(f), f.loaded, ""
		}
		return nil, "", "not loaded"
	}
	if f.fail != "" && (f.failOnly == "" || f.failOnly == name) {
		return nil, "", f.fail
	}
	if f.failOnly != "" {
		return nil, "", name + ": cannot open shared object file"
	}
	if f.open == "" || f.open == name {
		return Handle(f), name, ""
	}
	return nil, "", name + ": cannot open shared object file"
}
