package lockedcall

import (
	"fmt"
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// LockEffects is the fact lockedcall exports for a function that returns with
// a mutex in another state than it found it: a lock helper such as
//
//	func (i *Initializer) lock() { i.mu.Lock(); ... }
//
// acquires its receiver's field mu, and the matching unlock releases it. At a
// call site the effects are applied to the caller's own paths, so that a call
// made between i.lock() and i.unlock() is seen to run under i.mu, in the
// function's package and in packages that import it.
//
// An effect is recorded only when it happens on every path that returns: a
// helper that locks on some paths only (a TryLock wrapper) exports nothing.
type LockEffects struct {
	Effects []LockEffect
}

// LockEffect is one thing a function does to one mutex, which it reaches from
// a parameter or a package variable through fields and constant indexes.
type LockEffect struct {
	Release  bool     // releases the mutex; else acquires it
	Read     bool     // RLock rather than Lock
	Param    int      // index of the parameter the path starts at; -1 for a package variable
	Receiver bool     // Param is a method's receiver
	Global   string   // the package variable the path starts at, as "import/path.name"
	PkgName  string   // the name of the package that declares Global
	Steps    []string // field names (and "[k]" indexes) from the start to the mutex
	Name     string   // the path as the function's source spells it, e.g. "i.mu"
}

// AFact marks LockEffects as an analysis fact.
func (*LockEffects) AFact() {}

// String renders the effects as the tests expect them, e.g.
// "acquires receiver field mu".
func (f *LockEffects) String() string {
	parts := make([]string, len(f.Effects))
	for i, e := range f.Effects {
		parts[i] = e.String()
	}
	return strings.Join(parts, "; ")
}

// String renders one effect, e.g. "releases param 1 field mu" or
// "acquires package variable registry.mu (read)".
func (e LockEffect) String() string {
	verb := "acquires"
	if e.Release {
		verb = "releases"
	}
	var where string
	switch {
	case e.Param < 0:
		where = "package variable " + e.Name
	case len(e.Steps) == 0:
		where = fmt.Sprintf("param %d", e.Param)
	default:
		where = fmt.Sprintf("param %d field %s", e.Param, strings.Join(e.Steps, "."))
	}
	if e.Receiver {
		where = strings.Replace(where, fmt.Sprintf("param %d", e.Param), "receiver", 1)
	}
	if e.Read {
		where += " (read)"
	}
	return verb + " " + where
}

// effectsFromExit turns the state after a top-level function's returns (and
// its deferred calls) into its effects: mutexes held on every return path, and
// mutexes of the caller's released on every return path.
func effectsFromExit(fn *ssa.Function, exit *lockState) []LockEffect {
	if exit == nil {
		return nil
	}
	isMethod := fn.Signature.Recv() != nil
	var out []LockEffect
	for _, h := range exit.locks() {
		if h.must && h.path.portable && !h.reacquired {
			out = append(out, newEffect(h.path, false, h.read, isMethod))
		}
	}
	for _, key := range sortedKeys(exit.released) {
		if r := exit.released[key]; r.must && r.path.portable {
			out = append(out, newEffect(r.path, true, false, isMethod))
		}
	}
	return out
}

func newEffect(p lockPath, release, read, isMethod bool) LockEffect {
	return LockEffect{
		Release:  release,
		Read:     read,
		Param:    p.param,
		Receiver: isMethod && p.param == 0,
		Global:   p.global,
		Steps:    p.steps,
		PkgName:  p.globalPkg,
		Name:     p.name,
	}
}

// effectPath returns the caller's path to the mutex of a callee's effect at a
// call with args; ok is false when the effect names a parameter the call lacks.
func (c *checker) effectPath(e LockEffect, args []ssa.Value, ctx *funcCtx) (p lockPath, ok bool) {
	switch {
	case e.Param >= 0 && e.Param < len(args):
		p = c.pathOf(args[e.Param], ctx)
	case e.Param < 0:
		p = c.globalPath(e.Global, e.PkgName)
	default:
		return lockPath{}, false
	}
	t := types.Type(nil)
	if e.Param >= 0 {
		t = args[e.Param].Type()
	}
	for _, step := range e.Steps {
		owner := t
		p = p.extend(step, true)
		if t != nil {
			if f := fieldAt(t, []string{step}); f != nil {
				p.id, t = fieldID(owner, step), f.Type()
			} else {
				t = nil
			}
		}
	}
	return p, true
}
