package dynload

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/device/driver"
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
		{"the variable names the only file tried", "/opt/x/libx.so", map[string]bool{"libx.so.2": true},
			[]string{"/opt/x/libx.so"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(spec.Env, tc.env)
			r := &recorder{ok: tc.ok}
			lib, err := load(r, spec)
			if got, want := strings.Join(r.calls, "; "), strings.Join(tc.calls, "; "); got != want {
				t.Errorf("calls %q, want %q", got, want)
			}
			if tc.path == "" {
				if !errors.Is(err, driver.ErrDriverNotFound) || !strings.Contains(err.Error(), "DYNLOAD_TEST_LIBRARY=/opt/x/libx.so") {
					t.Errorf("err = %v, want ErrDriverNotFound naming the variable", err)
				}
				return
			}
			if err != nil || lib.Path != tc.path || lib.Preloaded != tc.preloaded {
				t.Errorf("Load = %+v, %v; want %s (preloaded %v)", lib, err, tc.path, tc.preloaded)
			}
		})
	}
	t.Run("nothing found: every name and directory in the message", func(t *testing.T) {
		t.Setenv(spec.Env, "")
		_, err := load(&recorder{}, spec)
		var de *driver.DriverError
		if !errors.As(err, &de) || de.Op != "dlopen" || !errors.Is(err, driver.ErrDriverNotFound) || de.Hint != "install x" {
			t.Fatalf("err = %#v", err)
		}
		for _, want := range []string{"libx.so.2: cannot open shared object file", "libx.so.2, libx.so.1 through the loader's search and in " + dir} {
			if !strings.Contains(de.Message, want) {
				t.Errorf("message %q lacks %q", de.Message, want)
			}
		}
	})
}
