package host

import (
	"syscall"
	"unsafe"
)

// readFile reads the file at the NUL-terminated path into buf, with system
// calls alone, so that nothing is allocated.
func readFile(path []byte, buf []byte) (int, error) {
	const atFDCWD = -100
	fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD&0xffffffffffffffff), uintptr(unsafe.Pointer(&path[0])),
		uintptr(syscall.O_RDONLY|syscall.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	defer syscall.Close(int(fd))
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(int(fd), buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}
