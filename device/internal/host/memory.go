package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// ErrNoMemAvailable is returned for a meminfo without MemAvailable (kernels
// before 3.14).
var ErrNoMemAvailable = errors.New("hostmem: /proc/meminfo has no MemAvailable")

// meminfoPath is /proc/meminfo under the process's proc root, NUL-terminated for the
// system call, read once: the root is the process's for its life.
var meminfoPath = sync.OnceValue(func() []byte { return append([]byte(filepath.Join(Proc(), "meminfo")), 0) })

// ReadMemory returns the host's available and total memory in bytes.
func ReadMemory() (available, total uint64, err error) {
	var buf [8192]byte
	n, err := readFile(meminfoPath(), buf[:])
	if err != nil {
		return 0, 0, fmt.Errorf("hostmem: reading %s: %w", meminfoPath()[:len(meminfoPath())-1], err)
	}
	return parseMeminfo(buf[:n])
}

// ReadMemoryAt is ReadMemory of root/meminfo, for tests; it allocates.
func ReadMemoryAt(root string) (available, total uint64, err error) {
	var buf [8192]byte
	n, err := readFile(append([]byte(filepath.Join(root, "meminfo")), 0), buf[:])
	if err != nil {
		return 0, 0, err
	}
	return parseMeminfo(buf[:n])
}

// parseMeminfo reads MemAvailable and MemTotal ("MemTotal:  131072 kB") from
// meminfo's text.
func parseMeminfo(b []byte) (available, total uint64, err error) {
	var haveAvail, haveTotal bool
	for len(b) > 0 {
		line := b
		if i := indexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		switch {
		case hasPrefix(line, "MemAvailable:"):
			available, haveAvail = kilobytes(line[len("MemAvailable:"):]), true
		case hasPrefix(line, "MemTotal:"):
			total, haveTotal = kilobytes(line[len("MemTotal:"):]), true
		}
	}
	switch {
	case !haveTotal:
		return 0, 0, errors.New("hostmem: /proc/meminfo has no MemTotal")
	case !haveAvail:
		return 0, total, ErrNoMemAvailable
	}
	return available, total, nil
}

// kilobytes is the count in " 123 kB", in bytes.
func kilobytes(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v*10 + uint64(c-'0')
		case c == ' ' || c == '\t':
			if v != 0 {
				return v * 1024
			}
		default:
			return v * 1024
		}
	}
	return v * 1024
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// CounterPath returns path NUL-terminated, for ReadCounter: build it once, read it
// often.
func CounterPath(path string) []byte { return append([]byte(path), 0) }

// ReadCounter reads the decimal number a sysfs counter file holds (amdgpu's
// mem_info_vram_used, say), allocating nothing but on failure. path is
// NUL-terminated (CounterPath).
func ReadCounter(path []byte) (uint64, error) {
	var buf [64]byte
	n, err := readFile(path, buf[:])
	if err != nil {
		return 0, fmt.Errorf("hostmem: reading %s: %w", string(path[:len(path)-1]), err)
	}
	var v uint64
	digits := 0
	for _, c := range buf[:n] {
		if c < '0' || c > '9' {
			break
		}
		v, digits = v*10+uint64(c-'0'), digits+1
	}
	if digits == 0 {
		return 0, fmt.Errorf("hostmem: %s holds %q, not a number", string(path[:len(path)-1]), string(buf[:n]))
	}
	return v, nil
}
