package lockedcall

import "golang.org/x/tools/go/ssa"

// A call changes which mutexes are held in one of three ways: it is a Lock or
// Unlock itself, it calls a function with LockEffects, or it runs a local
// closure that locks or unlocks. The first two translate into lockActions
// here; a closure's are the difference between the states before and after
// it (exitActions). A call made now applies its actions at once (applyNow); a
// deferred call schedules them for the function's return (atReturn).

// lockAction is one thing a call does to one mutex.
type lockAction struct {
	op   lockOp // opLock or opRLock acquire, opUnlock or opRUnlock release
	path lockPath
	name string
	// must is false for what a closure does on some of its paths only.
	must bool
}

func (a lockAction) acquires() bool { return a.op == opLock || a.op == opRLock }
func (a lockAction) releases() bool { return a.op == opUnlock || a.op == opRUnlock }

// staticTopLevel returns the declared function or method a call runs, when it
// is a static call of one, else nil.
func staticTopLevel(common *ssa.CallCommon) *ssa.Function {
	if common.IsInvoke() {
		return nil
	}
	if fn, ok := common.Value.(*ssa.Function); ok && fn.Parent() == nil {
		return fn
	}
	return nil
}

// lockActions translates a lock operation, or a static call of a function with
// LockEffects, into what it does to mutexes as seen from f's function. ok is
// false for any other call.
func (f *flow) lockActions(common *ssa.CallCommon) (actions []lockAction, ok bool) {
	if op, lockValue := lockOpOf(common); op != notLockOp {
		p := f.c.pathOf(lockValue, f.ctx)
		return []lockAction{{op: op, path: p, name: f.c.lockName(common, p), must: true}}, true
	}
	fn := staticTopLevel(common)
	if fn == nil {
		return nil, false
	}
	for _, e := range f.c.effectsOf(fn) {
		p, ok := f.c.effectPath(e, common.Args, f.ctx)
		if !ok {
			continue
		}
		op := opLock
		switch {
		case e.Release:
			op = opUnlock
		case e.Read:
			op = opRLock
		}
		actions = append(actions, lockAction{op: op, path: p, name: p.name, must: true})
	}
	return actions, true
}

// applyNow applies the actions of a call as it runs. A TryLock's mutex is held
// where its result is true (see flow.edge).
func (f *flow) applyNow(actions []lockAction, site *ssa.Call, st *lockState) {
	for _, a := range actions {
		switch {
		case a.acquires():
			st.acquire(a.path, a.name, a.op == opRLock)
		case a.releases():
			st.release(a.path)
		case site != nil && (a.op == opTryLock || a.op == opTryRLock):
			f.tries[site] = pendingLock{path: a.path, name: a.name, read: a.op == opTryRLock}
		}
	}
}

// atReturn schedules the actions of a deferred call: a mutex it releases stays
// held until the function returns, and one it acquires is held again then
// (testing.B.Run's `benchmarkLock.Unlock(); defer benchmarkLock.Lock()`).
func (f *flow) atReturn(actions []lockAction, st *lockState) {
	for _, a := range actions {
		switch {
		case a.releases():
			st.deferRelease(a.path, a.must)
		case a.acquires():
			f.relockAtReturn[a.path.key] = pendingLock{path: a.path, name: a.name, read: a.op == opRLock, somePaths: !a.must}
		}
	}
}

// exitActions is what a closure did to mutexes, from the state before it was
// called and the state it returned with: the mutexes it released on every
// path, and those it took or released (of its caller's) on some path.
func exitActions(before, exit *lockState) []lockAction {
	var out []lockAction
	for _, key := range sortedKeys(before.held) {
		if _, still := exit.held[key]; !still {
			h := before.held[key]
			out = append(out, lockAction{op: opUnlock, path: h.path, name: h.name, must: true})
		}
	}
	for _, key := range sortedKeys(exit.held) {
		if _, was := before.held[key]; !was {
			h := exit.held[key]
			op := opLock
			if h.read {
				op = opRLock
			}
			out = append(out, lockAction{op: op, path: h.path, name: h.name, must: h.must})
		}
	}
	for _, key := range sortedKeys(exit.released) {
		_, wasHeld := before.held[key]
		_, wasReleased := before.released[key]
		if !wasHeld && !wasReleased {
			r := exit.released[key]
			out = append(out, lockAction{op: opUnlock, path: r.path, name: r.path.name, must: r.must})
		}
	}
	return out
}
