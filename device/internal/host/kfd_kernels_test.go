package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kernelDir builds a fake rocBLAS library directory holding files (paths
// relative to it, empty contents).
func kernelDir(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		path := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, nil, 0o644))
	}
	return dir
}

func TestKernelsCoverFollowsRocblasLookup(t *testing.T) {
	const (
		gemm90a     = "TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx90a.co"
		fallback90a = "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback_gfx90a"
	)
	for _, tc := range []struct {
		name    string
		files   []string
		target  int
		covered bool
		found   []string
	}{
		{"a lazy index covers its target, whatever the xnack modes of its kernels",
			[]string{"TensileLibrary_lazy_gfx90a.dat", gemm90a, fallback90a + "-xnack-.hsaco", fallback90a + "-xnack+.hsaco"},
			90010, true, []string{"gfx90a", "gfx90a:xnack+", "gfx90a:xnack-"}},
		{"a lazy index for another target does not cover",
			[]string{"TensileLibrary_lazy_gfx1030.dat", "TensileLibrary_lazy_gfx90a.dat"},
			110000, false, []string{"gfx1030", "gfx90a"}},
		{"an eager per-target index covers",
			[]string{"TensileLibrary_gfx1030.dat", "TensileLibrary_gfx1030.co"},
			100300, true, []string{"gfx1030"}},
		{"a YAML-format index covers",
			[]string{"TensileLibrary_lazy_gfx1100.yaml"},
			110000, true, []string{"gfx1100"}},
		{"the merged index covers a target with its code objects beside it",
			[]string{"TensileLibrary.dat", "TensileLibrary_gfx908.co", "Kernels.so-000-gfx908-xnack-.hsaco"},
			90008, true, []string{"gfx908"}},
		{"the merged index does not cover a target without code objects",
			[]string{"TensileLibrary.dat", "TensileLibrary_gfx908.co"},
			90010, false, []string{"gfx908"}},
		{"code objects without an index do not cover",
			[]string{gemm90a},
			90010, false, []string{"gfx90a"}},
		{"a per-target subdirectory holds the target's index",
			[]string{"gfx942/TensileLibrary_lazy_gfx942.dat", "gfx942/TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback_gfx942.dat", "TensileLibrary_lazy_gfx1100.dat"},
			90402, true, []string{"gfx1100", "gfx942"}},
		{"a per-target subdirectory hides an index beside it, as rocBLAS looks only inside",
			[]string{"gfx942/TensileLibrary_gfx942.co", "TensileLibrary_lazy_gfx942.dat"},
			90402, false, []string{"gfx942"}},
		{"a generic index covers a member of its family",
			[]string{"TensileLibrary_lazy_gfx11-generic.dat", "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback_gfx11-generic.hsaco"},
			110003, true, []string{"gfx11-generic"}},
		{"a generic index does not cover another family",
			[]string{"TensileLibrary_lazy_gfx11-generic.dat", "TensileLibrary_lazy_gfx10-3-generic.dat"},
			90012, false, []string{"gfx10-3-generic", "gfx11-generic"}},
		{"gfx9-generic does not cover gfx90a, which is in no generic family",
			[]string{"TensileLibrary_lazy_gfx9-generic.dat", "TensileLibrary_lazy_gfx9-4-generic.dat"},
			90010, false, []string{"gfx9-4-generic", "gfx9-generic"}},
		{"gfx9-4-generic covers gfx942",
			[]string{"TensileLibrary_lazy_gfx9-4-generic.dat"},
			90402, true, []string{"gfx9-4-generic"}},
		{"target features in LLVM's and underscore spellings are read",
			[]string{"TensileLibrary_Type_x_gfx90a:xnack-.hsaco", "TensileLibrary_Type_x_gfx906_sramecc+_xnack-.hsaco"},
			90006, false, []string{"gfx906:sramecc+:xnack-", "gfx90a:xnack-"}},
		{"files that name no target are left out",
			[]string{"librocblas.so", "TensileManifest.txt", "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback.dat", "Kernels.so-000-gfx1030.hsaco", "notes/TensileLibrary_lazy_gfx1030.dat"},
			100300, false, nil},
		{"an empty directory covers nothing", nil, 100300, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := kernelDir(t, tc.files...)
			covered, found, err := KernelsCover(dir, tc.target)
			require.NoError(t, err)
			assert.Equal(t, tc.covered, covered, "covered")
			assert.Equal(t, tc.found, found, "found")
		})
	}
}

func TestKernelsCoverErrorsNameTheDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "rocblas", "library")
	_, _, err := KernelsCover(missing, 90010)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.True(t, errors.Is(err, os.ErrNotExist))

	notDir := filepath.Join(kernelDir(t, "library"), "library")
	_, _, err = KernelsCover(notDir, 90010)
	require.Error(t, err)
	assert.Contains(t, err.Error(), notDir)

	dir := kernelDir(t, "TensileLibrary_lazy_gfx90a.dat")
	_, _, err = KernelsCover(dir, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "names no target")
}
