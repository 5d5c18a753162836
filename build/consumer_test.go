package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAConsumerNeverDownloadsMumax: a module that imports every backend
// (device/backends) and runs go mod tidy, over a module cache of its own
// that starts empty, has no mumax in its go.mod and never downloads it:
// only a program that imports device/cuda/cudalink, a module of its own,
// pulls mumax's cu.
func TestAConsumerNeverDownloadsMumax(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a module cache's worth of gpuinit's dependencies")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	consumer := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(consumer, name), []byte(body), 0o644))
	}
	write("go.mod", "module example.com/consumer\n\ngo 1.26.0\n\nrequire github.com/gpuinit/gpuinit v0.0.0\n\nreplace github.com/gpuinit/gpuinit => "+root+"\n")
	write("main.go", "package main\n\nimport _ \"github.com/gpuinit/gpuinit/device/backends\"\n\nfunc main() {}\n")
	cache := t.TempDir()
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = consumer
	tidy.Env = append(os.Environ(), "GOMODCACHE="+cache, "GOFLAGS=-modcacherw", "GOWORK=off")
	out, err := tidy.CombinedOutput()
	require.NoError(t, err, "go mod tidy:\n%s", out)
	mod, err := os.ReadFile(filepath.Join(consumer, "go.mod"))
	require.NoError(t, err)
	assert.NotContains(t, string(mod), "mumax", "go.mod:\n%s", mod)
	_, err = os.Stat(filepath.Join(cache, "github.com", "mumax"))
	assert.True(t, os.IsNotExist(err), "the fresh module cache has mumax: go mod tidy downloaded it\n%s", out)
	assert.NotContains(t, string(out), "mumax")
	t.Logf("go.mod:\n%s", strings.TrimSpace(string(mod)))
}
