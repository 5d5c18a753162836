package health

import (
	"context"
	"sync"
	"time"

	"github.com/gpuinit/gpuinit/device/driver"
)

// memoryWait bounds how long the status waits for a device's free memory:
// the read is a driver call (NVML, sysfs), quick unless the driver hangs,
// and the status never blocks on one.
const memoryWait = 50 * time.Millisecond

// memoryReads are the status's reads of free memory, one in flight per
// device: a read stuck in the driver is not joined by another at each
// status.
type memoryReads struct {
	mu       sync.Mutex
	inFlight map[int]chan driver.Memory // ordinal -> the read under way's result
}

// freeMemory returns device ordinal's memory, and false where it cannot be
// read without waiting longer than memoryWait (or at all).
func (h *Health) freeMemory(ordinal int) (driver.Memory, bool) {
	h.memory.mu.Lock()
	ch, busy := h.memory.inFlight[ordinal]
	if !busy {
		if h.memory.inFlight == nil {
			h.memory.inFlight = map[int]chan driver.Memory{}
		}
		ch = make(chan driver.Memory, 1)
		h.memory.inFlight[ordinal] = ch
		go func() {
			m, err := h.rt.Memory(context.Background(), ordinal) // under the Runtime's call deadline
			h.memory.mu.Lock()
			delete(h.memory.inFlight, ordinal)
			h.memory.mu.Unlock()
			if err == nil {
				ch <- m
			}
			close(ch)
		}()
	}
	h.memory.mu.Unlock()
	t := time.NewTimer(memoryWait)
	defer t.Stop()
	select {
	case m, ok := <-ch:
		return m, ok
	case <-t.C:
	}
	return driver.Memory{}, false
}
