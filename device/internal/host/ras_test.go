package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeBlocks(t *testing.T, dir string, blocks map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, body := range blocks {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+"_err_count"), []byte(body), 0o644))
	}
}

func TestReadSumsTheBlocksAmdgpuWrites(t *testing.T) {
	for _, c := range []struct {
		name    string
		blocks  map[string]string
		want    RASCounts
		wantErr string
	}{
		{"two blocks", map[string]string{"umc": "ue: 2\nce: 7\n", "gfx": "ue: 0\nce: 1\n"},
			RASCounts{Blocks: []RASBlock{{"gfx", 0, 1}, {"umc", 2, 7}}, Uncorrectable: 2, Correctable: 8}, ""},
		{"spaces as amdgpu may pad them", map[string]string{"sdma": "ue:  0\nce:   3"},
			RASCounts{Blocks: []RASBlock{{"sdma", 0, 3}}, Correctable: 3}, ""},
		{"a count that is no number", map[string]string{"umc": "ue: many\nce: 0\n"}, RASCounts{}, "is not a count"},
		{"a file without both lines", map[string]string{"umc": "ue: 1\n"}, RASCounts{}, "not the ue: and ce: lines"},
		{"no counter files", map[string]string{}, RASCounts{}, "no *_err_count files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ras")
			writeBlocks(t, dir, c.blocks)
			got, err := ReadRAS(dir)
			if c.wantErr != "" {
				assert.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestDirIsFoundByPCIBusID(t *testing.T) {
	t.Run("under the PCI device, any case", func(t *testing.T) {
		sys := t.TempDir()
		want := filepath.Join(sys, "bus/pci/devices/0000:c1:00.0/ras")
		writeBlocks(t, want, map[string]string{"umc": "ue: 0\nce: 0\n"})
		got, err := RASDir(sys, "0000:C1:00.0")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("through class/drm's card links where bus/ is not mounted", func(t *testing.T) {
		sys := t.TempDir()
		pci := filepath.Join(sys, "devices/pci0000:00/0000:03:00.0")
		writeBlocks(t, filepath.Join(pci, "ras"), map[string]string{"umc": "ue: 0\nce: 0\n"})
		other := filepath.Join(sys, "devices/pci0000:00/0000:04:00.0")
		writeBlocks(t, filepath.Join(other, "ras"), map[string]string{"umc": "ue: 9\nce: 9\n"})
		for card, target := range map[string]string{"card0": other, "card1": pci} {
			require.NoError(t, os.MkdirAll(filepath.Join(sys, "class/drm", card), 0o755))
			require.NoError(t, os.Symlink(target, filepath.Join(sys, "class/drm", card, "device")))
		}
		got, err := RASDir(sys, "0000:03:00.0")
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(sys, "class/drm/card1/device/ras"), got)
	})
	t.Run("a board without RAS", func(t *testing.T) {
		sys := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(sys, "bus/pci/devices/0000:c1:00.0"), 0o755))
		_, err := RASDir(sys, "0000:c1:00.0")
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.ErrorContains(t, err, "0000:c1:00.0")
	})
}

func TestRiseNamesTheBlocksThatRose(t *testing.T) {
	before := RASCounts{Blocks: []RASBlock{{"gfx", 0, 1}, {"umc", 2, 7}}}
	now := RASCounts{Blocks: []RASBlock{{"gfx", 1, 1}, {"umc", 4, 9}, {"sdma", 0, 0}}}
	blocks, by := RASRise(before, now, false)
	assert.Equal(t, []string{"gfx", "umc"}, blocks)
	assert.Equal(t, uint64(3), by)
	blocks, by = RASRise(before, now, true)
	assert.Equal(t, []string{"umc"}, blocks)
	assert.Equal(t, uint64(2), by)
	blocks, by = RASRise(now, before, false)
	assert.Empty(t, blocks, "counts that fell (a driver reload) are a new baseline, not a rise")
	assert.Zero(t, by)
}
