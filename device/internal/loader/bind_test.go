//go:build linux && cgo

package loader

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/gpuinit/gpuinit/device/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// table stands in for a backend's C table of function pointers.
type table struct {
	strlen, getpid, optional unsafe.Pointer
}

func TestBindFillsTheTableAllOrNothing(t *testing.T) {
	spec := Spec{Backend: "libc", Names: []string{"libc.so.6"}, Env: "DYNLOAD_TEST_LIBC"}
	lib, err := Load(spec)
	require.NoError(t, err)
	assert.True(t, lib.Preloaded, "every Go binary with cgo has libc")
	assert.Contains(t, lib.Path, "libc.so.6")
	syms := func(missingRequired bool) []Symbol {
		return []Symbol{
			{Name: "strlen", Offset: unsafe.Offsetof(table{}.strlen), Required: true},
			{Name: "getpid", Offset: unsafe.Offsetof(table{}.getpid), Required: true},
			{Name: "gpuinit_no_such_function", Offset: unsafe.Offsetof(table{}.optional), Required: missingRequired},
		}
	}

	var tb table
	err = lib.Bind(spec, syms(true), unsafe.Pointer(&tb), unsafe.Sizeof(tb), "upgrade libc")
	var de *driver.DriverError
	require.ErrorAs(t, err, &de)
	assert.True(t, errors.Is(err, driver.ErrDriverMismatch))
	assert.Equal(t, "dlsym gpuinit_no_such_function", de.Op, "the function is named in Op")
	assert.Empty(t, de.Name, "Name is a code's name, and a missing function has none")
	assert.Contains(t, de.Message, "gpuinit_no_such_function")
	assert.Equal(t, "upgrade libc", de.Hint)
	assert.Equal(t, table{}, tb, "a missing required function leaves the table as it was")

	require.NoError(t, lib.Bind(spec, syms(false), unsafe.Pointer(&tb), unsafe.Sizeof(tb), "upgrade libc"))
	assert.NotNil(t, tb.strlen)
	assert.NotNil(t, tb.getpid)
	assert.NotEqual(t, tb.strlen, tb.getpid)
	assert.Nil(t, tb.optional, "an optional function missing stays NULL")
}

func TestBindRefusesAnOffsetOutsideTheTable(t *testing.T) {
	lib, err := Load(Spec{Backend: "libc", Names: []string{"libc.so.6"}})
	require.NoError(t, err)
	var tb table
	assert.PanicsWithValue(t, "dynload: strlen's offset 24 is outside its table of 24 bytes", func() {
		_ = lib.Bind(Spec{}, []Symbol{{Name: "strlen", Offset: 24}}, unsafe.Pointer(&tb), unsafe.Sizeof(tb), "")
	})
}

func TestLoadReportsTheLoadersOwnMessage(t *testing.T) {
	notALibrary := filepath.Join(t.TempDir(), "libx.so.1")
	require.NoError(t, os.WriteFile(notALibrary, []byte("not ELF"), 0o644))
	t.Setenv("DYNLOAD_TEST_LIBRARY", notALibrary)
	_, err := Load(Spec{Backend: "x", Names: []string{"libx.so.1"}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x"})
	require.ErrorIs(t, err, driver.ErrDriverMismatch, "a file the user named that does not load is no missing driver")
	assert.Contains(t, err.Error(), notALibrary+": file too short", "dlerror's text, read in the same C call")
	assert.NotContains(t, err.Error(), "install x", "the user named the file: no advice to install")
}

// TestAFileThatIsNotTheLibraryIsSaidSo: libc named as the driver lacks the
// function every version of the driver has, so it is no old driver.
func TestAFileThatIsNotTheLibraryIsSaidSo(t *testing.T) {
	t.Setenv("DYNLOAD_TEST_LIBRARY", "libc.so.6")
	spec := Spec{Backend: "x", Names: []string{"libx.so.1"}, Env: "DYNLOAD_TEST_LIBRARY", Identity: "gpuinit_x_version"}
	lib, err := Load(spec)
	require.NoError(t, err)
	var tb table
	err = lib.Bind(spec, []Symbol{{Name: "gpuinit_x_version", Offset: 0, Required: true}}, unsafe.Pointer(&tb), unsafe.Sizeof(tb), "upgrade x")
	require.ErrorIs(t, err, driver.ErrDriverMismatch)
	assert.Contains(t, err.Error(), "is not libx.so.1: it has no gpuinit_x_version")
	assert.Contains(t, err.Error(), "point DYNLOAD_TEST_LIBRARY at the driver's libx.so.1")
	assert.NotContains(t, err.Error(), "upgrade x")
}

// TestARealMissingDependency builds a library that needs another, removes
// that one, and loads the first through the directories: dlerror names the
// dependency, and the error says the library was found but is not whole.
func TestARealMissingDependency(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	dep := filepath.Join(dir, "libgpuinitdep.so.1")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-Wl,-soname,libgpuinitdep.so.1", "-o", dep, write("dep.c", "int gpuinit_dep(void) { return 1; }\n")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Symlink(dep, filepath.Join(dir, "libgpuinitdep.so")))
	needy := filepath.Join(dir, "libx.so.1")
	out, err = exec.Command(cc, "-shared", "-fPIC", "-o", needy, write("x.c", "int gpuinit_dep(void);\nint x(void) { return gpuinit_dep(); }\n"),
		"-L"+dir, "-lgpuinitdep").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Remove(dep))
	t.Setenv("DYNLOAD_TEST_LIBRARY", "")
	_, err = Load(Spec{Backend: "x", Names: []string{"libx.so.1"}, Dirs: []string{dir}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x"})
	require.ErrorIs(t, err, driver.ErrDriverMismatch)
	assert.Contains(t, err.Error(), "found "+needy+", but it needs libgpuinitdep.so.1")
	assert.NotContains(t, err.Error(), "install x")
}
