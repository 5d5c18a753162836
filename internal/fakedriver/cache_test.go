package fakedriver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheCacheKeyNamesEverythingThatMakesALibrary: any input of a compile
// changes the key, and the same inputs give the same key.
func TestTheCacheKeyNamesEverythingThatMakesALibrary(t *testing.T) {
	cc := compiler(t)
	base, err := cacheKey(cc, CUDA)
	require.NoError(t, err)
	again, err := cacheKey(cc, CUDA)
	require.NoError(t, err)
	assert.Equal(t, base, again, "the same inputs")

	withDefine := CUDA
	withDefine.Defines = []string{"GPUINIT_FAKE_NO_CUINIT"}
	others := map[string]func() (string, error){
		"another source": func() (string, error) { return cacheKey(cc, NVML) },
		"another soname": func() (string, error) {
			return cacheKey(cc, Library{Source: CUDA.Source, Soname: "libcuda.so"})
		},
		"a define": func() (string, error) { return cacheKey(cc, withDefine) },
		"other flags": func() (string, error) {
			saved := compileFlags
			compileFlags = append([]string{"-O2"}, saved[1:]...)
			defer func() { compileFlags = saved }()
			return cacheKey(cc, CUDA)
		},
	}
	for name, key := range others {
		k, err := key()
		require.NoError(t, err, name)
		assert.NotEqual(t, base, k, name)
	}
	_, err = cacheKey("gpuinit-no-such-compiler", CUDA)
	assert.Error(t, err, "a compiler that is not there has no key")
}

// TestACompiledFakeIsKeptAndCopied: the first compile is kept; the next
// Build of the same library copies the kept file instead of compiling, and
// a test that writes to its copy leaves the kept one as it was. A kept file
// that is not a library is compiled over.
func TestACompiledFakeIsKeptAndCopied(t *testing.T) {
	cc := compiler(t)
	saved := cacheRoot
	cacheRoot = t.TempDir()
	t.Cleanup(func() { cacheRoot = saved })
	key, err := cacheKey(cc, CURAND)
	require.NoError(t, err)
	kept := filepath.Join(cacheRoot, key, CURAND.Soname)

	first, err := compileCached(cc, t.TempDir(), CURAND)
	require.NoError(t, err)
	compiled, err := os.ReadFile(first)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(compiled, elfMagic))
	keptBytes, err := os.ReadFile(kept)
	require.NoError(t, err, "the compile was kept")
	assert.Equal(t, compiled, keptBytes)

	// Mark the kept file: a copy carries the mark, a compile would not.
	marked := append(append([]byte{}, compiled...), "marked"...)
	require.NoError(t, os.WriteFile(kept, marked, 0o755))
	second, err := compileCached(cc, t.TempDir(), CURAND)
	require.NoError(t, err)
	got, err := os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, marked, got, "the second Build copied the kept file")

	require.NoError(t, os.WriteFile(second, []byte("a test's own bytes"), 0o755))
	keptBytes, err = os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, marked, keptBytes, "writing the copy left the kept file alone")

	require.NoError(t, os.WriteFile(kept, []byte("not a library"), 0o755))
	third, err := compileCached(cc, t.TempDir(), CURAND)
	require.NoError(t, err)
	got, err = os.ReadFile(third)
	require.NoError(t, err)
	assert.Equal(t, compiled, got, "a kept file that is no library is compiled again")
	keptBytes, err = os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, compiled, keptBytes, "and kept again")
}
