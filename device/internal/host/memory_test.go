package host

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadTakesMemAvailableNotMemFree(t *testing.T) {
	for _, tc := range []struct {
		name, meminfo string
		avail, total  uint64
		err           string
	}{
		{"a host with page cache", "MemTotal:       131072000 kB\nMemFree:         1024000 kB\nMemAvailable:   98304000 kB\nCached: 90000000 kB\n",
			98304000 * 1024, 131072000 * 1024, ""},
		{"no MemAvailable (before Linux 3.14)", "MemTotal: 2048 kB\nMemFree: 1024 kB\n", 0, 2048 * 1024, "no MemAvailable"},
		{"no MemTotal", "MemFree: 1 kB\n", 0, 0, "no MemTotal"},
		{"the last line unterminated", "MemAvailable: 10 kB\nMemTotal: 20 kB", 10 * 1024, 20 * 1024, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "meminfo"), []byte(tc.meminfo), 0o644))
			avail, total, err := ReadMemoryAt(dir)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NoError(t, err)
				assert.Equal(t, tc.avail, avail)
			}
			assert.Equal(t, tc.total, total)
		})
	}
}

func TestReadOfTheRealHostAllocatesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux's /proc")
	}
	avail, total, err := ReadMemory()
	require.NoError(t, err)
	assert.Positive(t, total)
	assert.LessOrEqual(t, avail, total)
	if raceEnabled {
		t.Skip("the race detector's hooks in syscall.Read allocate; checked without -race")
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _, _ = ReadMemory() }))
}

func BenchmarkRead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadMemory(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReadCounter(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"ok": "68702699520\n", "bad": "n/a\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	v, err := ReadCounter(CounterPath(filepath.Join(dir, "ok")))
	require.NoError(t, err)
	assert.Equal(t, uint64(68702699520), v)
	_, err = ReadCounter(CounterPath(filepath.Join(dir, "bad")))
	assert.ErrorContains(t, err, "not a number")
	_, err = ReadCounter(CounterPath(filepath.Join(dir, "missing")))
	assert.ErrorContains(t, err, "no such file")
	if !raceEnabled {
		p := CounterPath(filepath.Join(dir, "ok"))
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ReadCounter(p) }))
	}
}
