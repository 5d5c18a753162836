package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// RASBlock is one hardware block's counts, as its <block>_err_count file holds
// them.
type RASBlock struct {
	Name          string // "umc", "gfx", "sdma", "mmhub", "xgmi_wafl", ...
	Uncorrectable uint64
	Correctable   uint64
}

// RASCounts are one GPU's RAS counts: each block's, by name, and their sums.
type RASCounts struct {
	Blocks        []RASBlock
	Uncorrectable uint64
	Correctable   uint64
}

// RASDir returns the ras directory of the GPU with PCI bus id busID (such as
// "0000:c1:00.0", any case) under sysRoot: the PCI device's, which is what
// /sys/class/drm/card*/device links to. It is found by the bus id, never by
// a card number, which differs from HIP's ordinal. An error wraps
// os.ErrNotExist where the board has no RAS counters.
func RASDir(sysRoot, busID string) (string, error) {
	busID = strings.ToLower(busID)
	dir := filepath.Join(sysRoot, "bus/pci/devices", busID, "ras")
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	// A sysfs mounted without bus/ (a container's partial mount) may still
	// have class/drm: follow the cards' device links to the bus id.
	cards, _ := filepath.Glob(filepath.Join(sysRoot, "class/drm/card*/device"))
	for _, card := range cards {
		target, err := filepath.EvalSymlinks(card)
		if err != nil || !strings.EqualFold(filepath.Base(target), busID) {
			continue
		}
		if _, err := os.Stat(filepath.Join(card, "ras")); err == nil {
			return filepath.Join(card, "ras"), nil
		}
	}
	return "", fmt.Errorf("ras: the GPU at %s has no RAS counters (%s): %w", busID, dir, os.ErrNotExist)
}

// ReadRAS reads every <block>_err_count file in dir. A file it cannot read or
// parse is an error naming the file: amdgpu refuses reads while it recovers
// a GPU, and a watch should retry, not guess.
func ReadRAS(dir string) (RASCounts, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_err_count"))
	if err != nil {
		return RASCounts{}, err
	}
	if len(files) == 0 {
		return RASCounts{}, fmt.Errorf("ras: no *_err_count files in %s: %w", dir, os.ErrNotExist)
	}
	slices.Sort(files)
	var c RASCounts
	for _, f := range files {
		b, err := readRASBlock(f)
		if err != nil {
			return RASCounts{}, err
		}
		c.Blocks = append(c.Blocks, b)
		c.Uncorrectable += b.Uncorrectable
		c.Correctable += b.Correctable
	}
	return c, nil
}

// maxRASFile bounds a read: the files hold two short lines.
const maxRASFile = 4096

func readRASBlock(path string) (RASBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return RASBlock{}, fmt.Errorf("ras: %w", err)
	}
	defer f.Close()
	buf := make([]byte, maxRASFile)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return RASBlock{}, fmt.Errorf("ras: reading %s: %w", path, err)
	}
	b := RASBlock{Name: strings.TrimSuffix(filepath.Base(path), "_err_count")}
	var sawUE, sawCE bool
	sc := bufio.NewScanner(bytes.NewReader(buf[:n]))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return RASBlock{}, fmt.Errorf("ras: %s: %q is not a count: %w", path, sc.Text(), err)
		}
		switch strings.TrimSpace(key) {
		case "ue":
			b.Uncorrectable, sawUE = v, true
		case "ce":
			b.Correctable, sawCE = v, true
		}
	}
	if !sawUE || !sawCE {
		return RASBlock{}, fmt.Errorf("ras: %s holds %q, not the ue: and ce: lines amdgpu writes", path, buf[:n])
	}
	return b, nil
}

// RASRise names the blocks whose uncorrectable (or, with correctable, the
// correctable) count rose from before to now, and by how much in all.
func RASRise(before, now RASCounts, correctable bool) (blocks []string, by uint64) {
	old := map[string]RASBlock{}
	for _, b := range before.Blocks {
		old[b.Name] = b
	}
	for _, b := range now.Blocks {
		was, cur := old[b.Name].Uncorrectable, b.Uncorrectable
		if correctable {
			was, cur = old[b.Name].Correctable, b.Correctable
		}
		if cur > was {
			blocks = append(blocks, b.Name)
			by += cur - was
		}
	}
	return blocks, by
}
