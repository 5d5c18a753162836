//go:build linux && cgo

package dynload

import (
	"errors"
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
	assert.Equal(t, "dlsym", de.Op)
	assert.Equal(t, "gpuinit_no_such_function", de.Name)
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
	t.Setenv("DYNLOAD_TEST_LIBRARY", "/nonexistent/libx.so.1")
	_, err := Load(Spec{Backend: "x", Names: []string{"libx.so.1"}, Env: "DYNLOAD_TEST_LIBRARY", Hint: "install x"})
	require.ErrorIs(t, err, driver.ErrDriverNotFound)
	assert.Contains(t, err.Error(), "/nonexistent/libx.so.1: cannot open shared object file", "dlerror's text, read in the same C call")
}
