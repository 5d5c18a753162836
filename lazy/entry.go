package lazy

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// entry is one function to run during initialization: init itself or a queued
// call. start is written by the initialization goroutine before the entry is
// handed to the watchdog, and never again.
type entry struct {
	fn     Func
	pc     [1]uintptr // where Call was called; zero for init
	isInit bool
	start  time.Time
}

// site renders the call site as "file.go:line function".
func (e *entry) site() string {
	if e.isInit {
		return "init"
	}
	if e.pc[0] == 0 {
		return "unknown call site"
	}
	f, _ := runtime.CallersFrames(e.pc[:]).Next()
	return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line) + " " + f.Function
}

// currentGoroutineID reads the running goroutine's id from the first line of its
// stack trace ("goroutine 42 [running]:"). It costs about a microsecond, so it is
// used only off the fast paths.
func currentGoroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if j := bytes.IndexByte(b, ' '); j >= 0 {
		b = b[:j]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("lazy: cannot read the goroutine id from runtime.Stack: " + err.Error())
	}
	return id
}

// trackLockHolder makes lock and unlock record the holder's goroutine id, so that
// tests can prove that no user code runs while its own goroutine holds the lock.
// Set only by tests, before any Initializer is used.
var trackLockHolder atomic.Bool

// testHookBeforeLock, when set by a test, runs in Call's slow path between the
// unlocked state check and taking the lock.
var testHookBeforeLock func()

func (i *Initializer) lock() {
	i.mu.Lock()
	if trackLockHolder.Load() {
		i.holder.Store(currentGoroutineID())
	}
}

func (i *Initializer) unlock() {
	if trackLockHolder.Load() {
		i.holder.Store(0)
	}
	i.mu.Unlock()
}
