package lockedcall

import (
	"fmt"
	"go/build"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// Acquires is the fact lockedcall exports for an exported function or method
// that locks a mutex as it runs, itself or through the static calls it makes
// (not in the goroutines it starts): Get locks its receiver's mu. Where the
// module's own code runs under a lock, a package that calls it follows it
// through this fact to see whether it takes that lock again.
type Acquires struct {
	Locks []Acquisition
}

// Acquisition is one mutex a function may lock as it runs.
type Acquisition struct {
	ID    string   // "import/path.Type.field", or "g:import/path.name" for a package variable
	Name  string   // the mutex as the locking function spells it, e.g. "c.mu"
	Read  bool     // RLock rather than Lock
	Param int      // the parameter the mutex is reached from (0 is a method's receiver); -1 if none
	Steps []string // the fields from that parameter to the mutex
	Chain []string // the functions from this one to the one that locks it
}

// AFact marks Acquires as an analysis fact.
func (*Acquires) AFact() {}

// String renders the fact as the tests expect it, e.g.
// "locks c.mu: Get → c.mu.Lock".
func (f *Acquires) String() string {
	parts := make([]string, len(f.Locks))
	for i, a := range f.Locks {
		parts[i] = "locks " + a.Name + ": " + strings.Join(a.path(), " → ")
	}
	return strings.Join(parts, "; ")
}

// path is the chain down to the lock call, e.g. [Get c.mu.Lock].
func (a Acquisition) path() []string {
	op := ".Lock"
	if a.Read {
		op = ".RLock"
	}
	return append(append([]string(nil), a.Chain...), a.Name+op)
}

// key is the access path of the mutex from its parameter or package
// variable, as lockPath.key; "" for one reached otherwise.
func (a Acquisition) key() string {
	if a.Param < 0 {
		if strings.HasPrefix(a.ID, "g:") {
			return a.ID
		}
		return ""
	}
	p := lockPath{key: fmt.Sprintf("p%d", a.Param)}
	for _, s := range a.Steps {
		p = p.extend(s, true)
	}
	return p.key
}

// maxAcquired bounds how many mutexes one function's Acquires lists.
const maxAcquired = 8

// acquiresOf returns the mutexes fn may lock as it runs: from its body in
// this package (wrappers and closures included), from its fact in another.
// In a cycle of calls (a → b → a), the function asked first sees what the
// others lock, and they see nothing of its own: what each lists depends on
// which is asked first. The analysis asks in the same order in every run,
// with -factsonly too (the revorder fixture in testdata).
func (c *checker) acquiresOf(fn *ssa.Function) []Acquisition {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if a, ok := c.acquired[fn]; ok {
		return a
	}
	c.acquired[fn] = nil // a recursion guard: a cycle adds nothing it has not locked already
	var out []Acquisition
	obj, _ := fn.Object().(*types.Func)
	declared := fn.Synthetic == "" || fn.Synthetic == "from type information"
	switch {
	case fn.Pkg != nil && !c.moduleCode(fn.Pkg.Pkg.Path()):
		// Not the module's: its locks are not the module's either.
	case obj != nil && declared && obj.Pkg() != c.pass.Pkg:
		var fact Acquires
		if c.pass.ImportObjectFact(obj, &fact) {
			out = fact.Locks
		}
	case len(fn.Blocks) > 0:
		out = c.computeAcquires(fn)
	}
	c.acquired[fn] = out
	return out
}

// computeAcquires collects what fn's body locks, and what the functions it
// calls statically lock, mapped to fn's parameters where the mutex is reached
// from the call's arguments. Left out: goroutines, TryLock, a mutex of an
// object fn made itself (no one else can hold it yet), and a mutex fn
// releases for its caller before it locks it again (a wait).
func (c *checker) computeAcquires(fn *ssa.Function) []Acquisition {
	ctx := &funcCtx{fn: fn}
	released := c.releasesCallers(fn)
	// A deferred lock of a mutex the function also unlocks takes the
	// caller's lock back at return (unlock; defer lock): it is no new lock.
	unlocked, locked := c.unlockedKeys(fn, ctx)
	var out []Acquisition
	seen := map[string]bool{}
	add := func(a Acquisition) {
		if k := a.key(); k != "" && (released[k] || unlocked[k] && !locked[k]) {
			return // the caller's lock, given up first
		}
		k := fmt.Sprint(a.ID, a.Param, a.Steps, a.Read)
		if !seen[k] && len(out) < maxAcquired {
			seen[k] = true
			out = append(out, a)
		}
	}
	name := chainName(fn)
	var prefix []string
	if fn.Synthetic == "" {
		prefix = []string{name} // a wrapper's callee names itself
	}
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(ssa.CallInstruction)
			if _, isGo := instr.(*ssa.Go); !ok || isGo {
				continue
			}
			common := call.Common()
			_, deferred := instr.(*ssa.Defer)
			if op, v := lockOpOf(common); op != notLockOp {
				if op != opLock && op != opRLock || freshRoot(v) {
					continue
				}
				p := c.pathOf(v, ctx)
				if p.id == "" || released[p.key] || deferred && unlocked[p.key] {
					continue
				}
				a := Acquisition{ID: p.id, Name: c.lockName(common, p), Read: op == opRLock, Param: -1, Chain: []string{name}}
				if p.portable && p.param >= 0 {
					a.Param, a.Steps = p.param, p.steps
				}
				add(a)
				continue
			}
			callee := common.StaticCallee()
			if callee == nil || callee == fn || common.IsInvoke() {
				continue
			}
			for _, a := range c.acquiresOf(callee) {
				m := a
				m.Chain = joinChains(prefix, a.Chain)
				m.Param, m.Steps = -1, nil
				if a.Param >= 0 && a.Param < len(common.Args) {
					arg := common.Args[a.Param]
					if freshRoot(arg) {
						continue
					}
					p := c.pathOf(arg, ctx)
					for _, s := range a.Steps {
						p = p.extend(s, true)
					}
					if deferred && unlocked[p.key] {
						continue
					}
					if p.portable && p.param >= 0 {
						m.Param, m.Steps = p.param, p.steps
					}
				}
				add(m)
			}
		}
	}
	return out
}

// releasesCallers returns the keys of the mutexes a top-level function
// releases on behalf of its caller on some path, taking them back or not.
func (c *checker) releasesCallers(fn *ssa.Function) map[string]bool {
	if fn.Parent() != nil || !c.srcFuncs[fn] {
		return nil
	}
	exit := c.analyzeTopLevel(fn).exit
	if exit == nil {
		return nil
	}
	out := map[string]bool{}
	for k := range exit.released {
		out[k] = true
	}
	for k, h := range exit.held {
		if h.reacquired {
			out[k] = true
		}
	}
	return out
}

// unlockedKeys returns the keys of the mutexes fn unlocks, itself or through
// a helper with LockEffects, in calls that are not deferred, and of those it
// locks itself in such calls.
func (c *checker) unlockedKeys(fn *ssa.Function, ctx *funcCtx) (out, locked map[string]bool) {
	out, locked = map[string]bool{}, map[string]bool{}
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(*ssa.Call)
			if !ok {
				continue
			}
			switch op, v := lockOpOf(call.Common()); op {
			case opUnlock, opRUnlock:
				out[c.pathOf(v, ctx).key] = true
				continue
			case opLock, opRLock, opTryLock, opTryRLock:
				locked[c.pathOf(v, ctx).key] = true
				continue
			}
			if callee := staticTopLevel(call.Common()); callee != nil && callee != fn {
				for _, e := range c.effectsOf(callee) {
					if p, ok := c.effectPath(e, call.Call.Args, ctx); ok {
						if e.Release {
							out[p.key] = true
						} else {
							locked[p.key] = true
						}
					}
				}
			}
		}
	}
	return out, locked
}

// moduleCode reports whether the package at path is of the analyzed
// package's module, and not of the standard library, whose paths look like
// a GOPATH module's when there is no module information (in tests).
func (c *checker) moduleCode(path string) bool {
	if v, ok := c.modCode[path]; ok {
		return v
	}
	v := c.sameModule(path)
	if v && (c.pass.Module == nil || c.pass.Module.Path == "") {
		bp, err := build.Default.Import(path, "", build.FindOnly)
		v = err != nil || !bp.Goroot
	}
	c.modCode[path] = v
	return v
}

// freshRoot reports whether v is, or is a field of, an object the function
// allocated itself.
func freshRoot(v ssa.Value) bool {
	for {
		switch x := v.(type) {
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.Field:
			v = x.X
		case *ssa.Alloc:
			return true
		default:
			return false
		}
	}
}

// chainName names a function in a chain: Get, or (main's closure).
func chainName(fn *ssa.Function) string {
	if fn.Parent() != nil {
		name, _, _ := strings.Cut(topLevel(fn).Name(), "#")
		return "(" + name + "'s closure)"
	}
	name, _ := strings.CutSuffix(fn.Name(), "$bound")
	name, _ = strings.CutSuffix(name, "$thunk")
	return name
}

// exportAcquires exports an Acquires fact for each exported function and
// method of the package that may lock a mutex.
func (c *checker) exportAcquires(funcs []*ssa.Function) {
	for _, fn := range funcs {
		obj, ok := fn.Object().(*types.Func)
		if !ok || fn.Parent() != nil || obj.Pkg() != c.pass.Pkg || !obj.Exported() {
			continue
		}
		if a := c.acquiresOf(fn); len(a) > 0 {
			c.pass.ExportObjectFact(obj, &Acquires{Locks: a})
		}
	}
}

// reentryProof is a proven re-entry: code that runs under a held mutex and
// locks that mutex again.
type reentryProof struct {
	path []string // from the function that holds the mutex to the Lock
	read bool     // held and locked again for reading: it deadlocks once a writer waits
}

// verdict is the end of a re-entry message.
func (p *reentryProof) verdict() string {
	if p.read {
		return "deadlocks if it runs while a writer waits: " + strings.Join(p.path, " → ")
	}
	return "deadlocks if it runs: " + strings.Join(p.path, " → ")
}

// again says how the code locks the held mutex again.
func (p *reentryProof) again() string {
	if p.read {
		return "read-locks it again"
	}
	return "locks it again"
}

// proves returns the proof that acquisition a, made by code that runs while
// h is held, takes h again; mapped is the caller's key of a's mutex when a
// is reached from the call's arguments ("" when not), and sameInstance
// whether a must be the very mutex h (for direct calls) or may be any of
// its type's (for the module's code behind a function value).
func proves(h heldLock, a Acquisition, mapped string, sameInstance bool) bool {
	if !h.must || h.path.id == "" || h.path.id != a.ID {
		return false
	}
	if sameInstance && !strings.HasPrefix(a.ID, "g:") && mapped != h.path.key {
		return false
	}
	return true
}

// reentryDirect records a static call made while a mutex is held, of a
// function of the module that locks that same mutex as it runs: the same
// package variable, or the same field reached from the same value.
func (f *flow) reentryDirect(common *ssa.CallCommon, st *lockState) {
	if !f.reporting || !f.c.reentry || len(st.held) == 0 {
		return
	}
	callee := staticTopLevel(common)
	if callee == nil {
		return
	}
	if op, _ := lockOpOf(common); op != notLockOp {
		return
	}
	for _, a := range f.c.acquiresOf(callee) {
		mapped := ""
		if a.Param >= 0 && a.Param < len(common.Args) {
			p := f.c.pathOf(common.Args[a.Param], f.ctx)
			for _, s := range a.Steps {
				p = p.extend(s, true)
			}
			mapped = p.key
		}
		for _, h := range st.locks() {
			if proves(h, a, mapped, true) {
				f.recordReentry(common.Pos(), h, a, nil)
				return
			}
		}
	}
}

// reentryValue records a call of a function value made while a mutex is
// held, where every value it can hold is the module's own code, and one of
// them locks a mutex of the held one's type and field again.
func (f *flow) reentryValue(common *ssa.CallCommon, st *lockState) {
	if !f.reporting || !f.c.reentry || len(st.held) == 0 {
		return
	}
	for _, fn := range f.c.funcsOf(common.Value, f.ctx) {
		for _, a := range f.c.acquiresOf(fn) {
			for _, h := range st.locks() {
				if proves(h, a, "", false) {
					f.recordReentry(common.Pos(), h, a, []string{f.c.calleeText(common.Pos())})
					return
				}
			}
		}
	}
}

func (f *flow) recordReentry(pos token.Pos, h heldLock, a Acquisition, via []string) {
	path := joinChains(append([]string{chainName(f.ctx.fn)}, via...), a.path())
	f.c.reentries = append(f.c.reentries, finding{
		kind: reentryUnderLock, pos: pos, locks: []heldLock{h},
		reentry: &reentryProof{path: path, read: h.read && a.Read},
	})
}

// reentryMessage renders a direct or function-value re-entry.
func (c *checker) reentryMessage(fd *finding) string {
	return fmt.Sprintf("call of %s while %s %s; %s",
		c.calleeText(fd.pos), describeLocks(fd.locks), fd.reentry.again(), fd.reentry.verdict())
}

// reentryObligation checks the module's own code v, passed to or stored in a
// way into another package that calls it under ob's mutexes, for a lock of
// one of them: it returns the finding, without its kind and position, or nil.
func (c *checker) reentryObligation(ob Obligation, v ssa.Value, ctx *funcCtx) *finding {
	if !c.reentry || len(ob.Held) == 0 {
		return nil
	}
	for _, fn := range c.funcsOf(v, ctx) {
		for _, a := range c.acquiresOf(fn) {
			for _, h := range ob.Held {
				if h.ID != a.ID {
					continue
				}
				chain := joinChains(ob.Chain, a.path())
				held := heldLock{name: h.Name, read: h.Read, must: true}
				return &finding{oblig: &ob, locks: []heldLock{held}, where: ctx.fn,
					reentry: &reentryProof{path: chain, read: h.Read && a.Read}}
			}
		}
	}
	return nil
}

// obligationReentryMessage renders a proven re-entry through an obligation.
func (c *checker) obligationReentryMessage(fd *finding) string {
	ob, proof := fd.oblig, fd.reentry
	through := ""
	if len(ob.Via) > 0 {
		through = ", through " + strings.Join(ob.Via, " → ")
	}
	if fd.kind == storeToLocked {
		return fmt.Sprintf("%s is stored in %s, which package %s calls while %s (%s%s), and it %s; %s",
			c.storedText(fd.pos), fd.target, ob.Pkg, ob.Locks, ob.Where, through, proof.again(), proof.verdict())
	}
	return fmt.Sprintf("call of %s passes %s, which package %s calls while %s (%s%s), and it %s; %s",
		c.calleeText(fd.pos), fd.target, ob.Pkg, ob.Locks, ob.Where, through, proof.again(), proof.verdict())
}
