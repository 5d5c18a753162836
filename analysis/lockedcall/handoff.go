package lockedcall

import (
	"fmt"
	"go/token"

	"golang.org/x/tools/go/ssa"
)

// A goroutine handoff: the lock holder starts a goroutine and waits for it
// (a receive from a channel the goroutine sends on or closes, or a
// WaitGroup's Wait that it is Done with) before it unlocks. The goroutine's
// calls then run while the lock is held, and one that re-enters deadlocks as
// surely as a direct call. Only the shape within one function is seen: the go
// statement of a func literal and the wait, both with the lock held.

// goSite is a go statement of a closure made while locks are held.
type goSite struct {
	instr *ssa.Go
	mc    *ssa.MakeClosure
	locks []heldLock
}

// waitSite is a wait made while locks are held: a receive from ch, or
// WaitGroup.Wait on the group at wg.
type waitSite struct {
	ch, wg ssa.Value
	pos    token.Pos
	locks  []heldLock
}

// noteHandoff records go statements and waits made under a lock.
func (f *flow) noteHandoff(instr ssa.Instruction, st *lockState) {
	if !f.reporting || len(st.held) == 0 {
		return
	}
	switch instr := instr.(type) {
	case *ssa.Go:
		if mc, ok := instr.Call.Value.(*ssa.MakeClosure); ok {
			f.gos = append(f.gos, goSite{instr: instr, mc: mc, locks: st.locks()})
		}
	case *ssa.UnOp:
		if instr.Op == token.ARROW {
			f.waits = append(f.waits, waitSite{ch: instr.X, pos: instr.Pos(), locks: st.locks()})
		}
	case *ssa.Select:
		for _, s := range instr.States {
			if s.Dir == 2 { // types.RecvOnly
				f.waits = append(f.waits, waitSite{ch: s.Chan, pos: s.Pos, locks: st.locks()})
			}
		}
	case *ssa.Call:
		if fn := instr.Call.StaticCallee(); fn != nil && fn.String() == "(*sync.WaitGroup).Wait" {
			f.waits = append(f.waits, waitSite{wg: instr.Call.Args[0], pos: instr.Pos(), locks: st.locks()})
		}
	}
}

// handoffs reports what each goroutine the function waits for under a lock
// calls from outside, as running under that lock.
func (f *flow) handoffs() {
	for _, g := range f.gos {
		for _, w := range f.waits {
			locks := commonLocks(g.locks, w.locks)
			if len(locks) == 0 || !signals(g.mc, w) {
				continue
			}
			entry := newLockState()
			for _, h := range locks {
				entry.held[h.path.key] = h
			}
			body := g.mc.Fn.(*ssa.Function)
			ctx := &funcCtx{fn: body, parent: f.ctx, bindings: g.mc.Bindings, depth: f.ctx.depth + 1}
			res := f.c.analyze(ctx, entry)
			line := f.c.pass.Fset.Position(w.pos).Line
			for _, fd := range res.findings {
				if fd.note == "" && mentionsAny(fd.locks, locks) {
					fd.note = fmt.Sprintf("by the goroutine's starter, which waits for it at line %d", line)
					f.findings = append(f.findings, fd)
				}
			}
			break
		}
	}
}

// signals reports whether the closure sends on or closes the channel a wait
// receives from, or is Done with its WaitGroup, through a captured variable.
func signals(mc *ssa.MakeClosure, w waitSite) bool {
	body := mc.Fn.(*ssa.Function)
	bound := func(v ssa.Value, want ssa.Value) bool {
		fv, ok := v.(*ssa.FreeVar)
		if !ok || want == nil {
			return false
		}
		i := freeVarIndex(body, fv)
		return i >= 0 && (mc.Bindings[i] == want || loadOf(want) == mc.Bindings[i])
	}
	for _, b := range body.Blocks {
		for _, instr := range b.Instrs {
			switch instr := instr.(type) {
			case *ssa.Send:
				if bound(derefFreeVar(instr.Chan), w.ch) {
					return true
				}
			case *ssa.Call, *ssa.Defer:
				common := instr.(ssa.CallInstruction).Common()
				if b, ok := common.Value.(*ssa.Builtin); ok && b.Name() == "close" && bound(derefFreeVar(common.Args[0]), w.ch) {
					return true
				}
				if fn := common.StaticCallee(); fn != nil && fn.String() == "(*sync.WaitGroup).Done" && bound(common.Args[0], w.wg) {
					return true
				}
			}
		}
	}
	return false
}

// derefFreeVar sees through a load of a captured variable (a channel
// variable the closure shares with its parent).
func derefFreeVar(v ssa.Value) ssa.Value {
	if load, ok := v.(*ssa.UnOp); ok && load.Op == token.MUL {
		if fv, ok := load.X.(*ssa.FreeVar); ok {
			return fv
		}
	}
	return v
}

// loadOf returns the variable v is loaded from, if it is a load.
func loadOf(v ssa.Value) ssa.Value {
	if load, ok := v.(*ssa.UnOp); ok && load.Op == token.MUL {
		return load.X
	}
	return nil
}

func commonLocks(a, b []heldLock) []heldLock {
	var out []heldLock
	for _, h := range a {
		if mentions(b, h.path.key) {
			out = append(out, h)
		}
	}
	return out
}

func mentionsAny(locks, want []heldLock) bool {
	for _, h := range want {
		if mentions(locks, h.path.key) {
			return true
		}
	}
	return false
}
