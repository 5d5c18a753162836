package health

import (
	"context"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// memoryWait bounds how long the status waits for a device's free memory.
// The read is a driver call (NVML, sysfs), quick unless the driver hangs.
// The status never blocks on one.
const memoryWait = 50 * time.Millisecond

// memoryReads are the status's reads of free memory. One read is in flight
// per device, shared by every status that asks meanwhile. So a read stuck in
// the driver is not joined by another at each status.
type memoryReads struct {
	mu       sync.Mutex
	inFlight map[int]*memoryRead // ordinal -> the read under way
}

// memoryRead is one read of a device's memory. done closes once m and ok
// are set, so that every waiter reads the same result.
type memoryRead struct {
	done chan struct{}
	m    driver.Memory
	ok   bool
}

// freeMemory returns device ordinal's memory. It returns false where the
// memory cannot be read, or not within memoryWait.
func (h *Health) freeMemory(ordinal int) (driver.Memory, bool) {
	h.memory.mu.Lock()
	read, busy := h.memory.inFlight[ordinal]
	if !busy {
		if h.memory.inFlight == nil {
			h.memory.inFlight = map[int]*memoryRead{}
		}
		read = &memoryRead{done: make(chan struct{})}
		h.memory.inFlight[ordinal] = read
		go func() {
			m, err := h.rt.Memory(context.Background(), ordinal) // under the call deadline
			read.m, read.ok = m, err == nil
			h.memory.mu.Lock()
			delete(h.memory.inFlight, ordinal)
			h.memory.mu.Unlock()
			close(read.done)
		}()
	}
	h.memory.mu.Unlock()
	t := time.NewTimer(memoryWait)
	defer t.Stop()
	select {
	case <-read.done:
		return read.m, read.ok
	case <-t.C:
	}
	return driver.Memory{}, false
}
