package lazy

import (
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// entry is one function to run during initialization: init itself or a queued
// call. start is written by the initialization goroutine before the entry is
// published to the watchdog and to Running, and never again.
type entry struct {
	fn      Func
	pc      [1]uintptr // where Call was called; zero for init
	spawner string     // for a Call made by a go statement: where that statement is
	isInit  bool
	start   time.Time
	text    atomic.Pointer[string] // site's answer, made once: Running must not allocate each time
}

// recordCallSite records the frame depth frames above runtime.Callers. When
// that frame is the bottom of a goroutine (go i.Call(ctx, fn)), there is no
// caller to name, so it records the go statement that started the goroutine.
func (e *entry) recordCallSite(depth int) {
	if runtime.Callers(depth, e.pc[:]) == 0 {
		return
	}
	if f := runtime.FuncForPC(e.pc[0] - 1); f != nil && f.Name() == "runtime.goexit" {
		e.spawner = goStatementSite()
	}
}

// site renders the call site as "file.go:line function", once.
func (e *entry) site() string {
	if p := e.text.Load(); p != nil {
		return *p
	}
	s := e.render()
	e.text.Store(&s)
	return s
}

func (e *entry) render() string {
	switch {
	case e.isInit:
		return "init"
	case e.spawner != "":
		return e.spawner
	case e.pc[0] == 0:
		return "unknown call site"
	}
	f, _ := runtime.CallersFrames(e.pc[:]).Next()
	return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line) + " " + f.Function
}
