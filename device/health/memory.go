package health

import (
	"context"
	"sync"
	"time"
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
	inFlight map[int]chan uint64 // ordinal -> the read under way's result
}

// freeMemory returns device ordinal's free memory, or nil where it cannot be
// read without waiting longer than memoryWait (or at all).
func (h *Health) freeMemory(ordinal int) *uint64 {
	h.memory.mu.Lock()
	ch, busy := h.memory.inFlight[ordinal]
	if !busy {
		if h.memory.inFlight == nil {
			h.memory.inFlight = map[int]chan uint64{}
		}
		ch = make(chan uint64, 1)
		h.memory.inFlight[ordinal] = ch
		go func() {
			free, _, err := h.rt.MemoryInfo(context.Background(), ordinal) // under the Runtime's call deadline
			h.memory.mu.Lock()
			delete(h.memory.inFlight, ordinal)
			h.memory.mu.Unlock()
			if err == nil {
				ch <- free
			}
			close(ch)
		}()
	}
	h.memory.mu.Unlock()
	t := time.NewTimer(memoryWait)
	defer t.Stop()
	select {
	case free, ok := <-ch:
		if ok {
			return &free
		}
	case <-t.C:
	}
	return nil
}
