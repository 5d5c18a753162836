package lockedcall

import (
	"go/ast"
	"regexp"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A locked helper is a function that runs with its callers' lock held: its
// name ends in Locked, its doc says the lock must be held, or every call of it
// in the package is made with a lock held (or from another locked helper).
// What it calls from outside (not through its own parameters, which its
// callers' calls account for) is reported once, at the call in the helper,
// naming a caller that holds the lock, instead of at every call of the helper.

// lockedDoc and notLockedDoc recognize a doc comment that says a function runs
// with a lock held ("must be called with c.mu held", "Lock for nc should be
// held here upon entry"), and one that says the opposite.
var (
	lockedDoc = regexp.MustCompile(`(?i)\b(must|should|has to|needs to|is expected to) be called (with|while|under|holding)\b|` +
		`\bcallers? (must|should) (hold|have|own|acquire|lock)\b|` +
		`\b(must|should) be (held|locked)\b|` +
		`\brequires?\b[^.]*\bto be (held|locked)\b|` +
		`\bassumes?\b[^.]*\b(is|are) (held|locked)\b`)
	notLockedDoc = regexp.MustCompile(`(?i)\b(not|without|never|unlocked)\b[^.]*\b(held|locked|hold|lock)\b|\bunlocked\b`)
)

// siteLock is what one analysis saw at a static call in the package.
type siteLock struct {
	locks  []heldLock
	ctx    *funcCtx
	common *ssa.CallCommon
}

// noteSite records the locks held at a static call of a function of the
// package, for lockedHelpers.
func (f *flow) noteSite(site ssa.Instruction, common *ssa.CallCommon, st *lockState) {
	if !f.reporting || site == nil || len(st.held) == 0 {
		return
	}
	if g := staticTopLevel(common); g == nil || !f.c.srcFuncs[g] {
		return
	}
	if _, ok := f.c.heldSites[site]; !ok {
		f.c.heldSites[site] = siteLock{locks: st.locks(), ctx: f.ctx, common: common}
	}
}

// helperWitness says why a function is a locked helper: a call made with a
// lock held (and the chain of locked helpers from it), or its documentation.
type helperWitness struct {
	site       *siteLock
	chain      []string // from the caller holding the lock down to the helper
	documented bool
}

// lockedHelpers finds the package's locked helpers. A helper is only called
// with a lock held if each of its call sites is reached holding one, or lies in
// another locked helper; a helper that is called through a function value, an
// interface or from outside the package is not.
func (c *checker) lockedHelpers() map[*ssa.Function]helperWitness {
	ix := c.index()
	out := map[*ssa.Function]helperWitness{}
	var candidates []*ssa.Function
	for _, fn := range c.funcs {
		if fn.Parent() != nil || fn.Object() == nil {
			continue
		}
		obj := fn.Object()
		if documentedLocked(fn) {
			candidates = append(candidates, fn) // a witness, if its callers give one
			continue
		}
		if obj.Exported() || ix.escaped[fn] || ix.escaped[obj] || len(ix.callSites[fn]) == 0 ||
			(fn.Signature.Recv() != nil && ix.invoked[obj.Name()]) {
			continue
		}
		candidates = append(candidates, fn)
	}
	for changed := true; changed; {
		changed = false
		for _, fn := range candidates {
			if _, done := out[fn]; done {
				continue
			}
			if w, ok := c.onlyUnderLock(fn, out); ok {
				out[fn] = w
				changed = true
			}
		}
	}
	for _, fn := range candidates {
		if _, ok := out[fn]; !ok && documentedLocked(fn) {
			out[fn] = helperWitness{documented: true}
		}
	}
	return out
}

// onlyUnderLock reports whether every call of fn is made holding a lock or
// from a known locked helper, and returns a witness.
func (c *checker) onlyUnderLock(fn *ssa.Function, known map[*ssa.Function]helperWitness) (helperWitness, bool) {
	var w helperWitness
	found := false
	// The calls come in the index's order, the source's: the first of each
	// kind is the first in the source. Positions would not do, since a driver
	// that parses a package's files in parallel numbers them in any order.
	for _, call := range c.index().callSites[fn] {
		if _, isGo := call.instr.(*ssa.Go); isGo || startedByGo(call.instr.Parent()) {
			return helperWitness{}, false // a goroutine does not hold its starter's lock
		}
		caller := topLevel(call.instr.Parent())
		if caller == fn {
			continue // recursion
		}
		// The witness is the first call that holds the lock itself, else the
		// first from a locked helper: messages are stable.
		if s, ok := c.heldSites[call.instr]; ok {
			if !found || w.site == nil || len(w.chain) > 2 {
				w = helperWitness{site: &s, chain: []string{caller.Name(), fn.Name()}}
			}
			found = true
			continue
		}
		up, ok := known[caller]
		if !ok {
			return helperWitness{}, false
		}
		if !found {
			w = helperWitness{site: up.site, chain: append(append([]string(nil), up.chain...), fn.Name()), documented: up.documented}
			found = true
		}
	}
	return w, found
}

// startedByGo reports whether fn, or a func literal it is nested in, is run
// by a go statement.
func startedByGo(fn *ssa.Function) bool {
	for ; fn.Parent() != nil; fn = fn.Parent() {
		for _, b := range fn.Parent().Blocks {
			for _, instr := range b.Instrs {
				g, ok := instr.(*ssa.Go)
				if !ok {
					continue
				}
				switch v := g.Call.Value.(type) {
				case *ssa.Function:
					if v == fn {
						return true
					}
				case *ssa.MakeClosure:
					if v.Fn == fn {
						return true
					}
				}
			}
		}
	}
	return false
}

func topLevel(fn *ssa.Function) *ssa.Function {
	for fn.Parent() != nil {
		fn = fn.Parent()
	}
	return fn
}

// documentedLocked reports whether fn's name or doc comment says it runs
// with a lock held.
func documentedLocked(fn *ssa.Function) bool {
	name := fn.Name()
	if strings.HasSuffix(name, "Locked") && !strings.HasSuffix(name, "Unlocked") || strings.HasSuffix(name, "_locked") {
		return true
	}
	decl, ok := fn.Syntax().(*ast.FuncDecl)
	if !ok || decl.Doc == nil {
		return false
	}
	doc := decl.Doc.Text()
	return mayDocumentLocked(doc) && lockedDoc.MatchString(doc) && !notLockedDoc.MatchString(doc)
}

// mayDocumentLocked is a cheap test that lockedDoc may match doc: each of its
// alternatives spells "held", "locked", "called" or "caller". Most doc
// comments have none of them, and the regexp is the costly part of the test.
func mayDocumentLocked(doc string) bool {
	lower := strings.ToLower(doc)
	return strings.Contains(lower, "held") || strings.Contains(lower, "locked") ||
		strings.Contains(lower, "called") || strings.Contains(lower, "caller")
}

// helperFindings analyzes each locked helper as running under the lock its
// witness holds, and returns what it calls from outside there.
func (c *checker) helperFindings(helpers map[*ssa.Function]helperWitness) []finding {
	var out []finding
	for _, fn := range c.funcs { // in source order: the findings' order decides obligations
		w, ok := helpers[fn]
		if !ok {
			continue
		}
		entry := newLockState()
		held := c.helperLock(fn, w)
		entry.held[held.path.key] = held
		res := c.analyze(&funcCtx{fn: fn}, entry)
		for _, fd := range res.findings {
			if innermost(&fd).out == fromParam {
				continue // the callers' calls report what they pass
			}
			if !mentions(fd.locks, held.path.key) {
				continue // the helper's own lock: reported by its analysis
			}
			fd.note = (&helperNote{fn: fn, witness: w}).describe()
			out = append(out, fd)
		}
	}
	return out
}

// innermost returns the origin of what a finding finally calls.
func innermost(fd *finding) outCall {
	for fd.inner != nil {
		fd = fd.inner
	}
	if fd.calls != nil {
		return *fd.calls
	}
	return outCall{out: fd.out}
}

func mentions(locks []heldLock, key string) bool {
	for _, h := range locks {
		if h.path.key == key {
			return true
		}
	}
	return false
}

// helperLock is the lock a helper runs under, named in the helper's terms
// where the witness's lock is reached from an argument of the call, or from
// a package variable; else named as the caller names it.
func (c *checker) helperLock(fn *ssa.Function, w helperWitness) heldLock {
	pseudo := heldLock{path: lockPath{key: "caller-lock", name: "a lock", param: -1}, name: "a lock", must: true}
	if w.site == nil || len(w.site.locks) == 0 {
		return pseudo
	}
	h := w.site.locks[0]
	pseudo.name, pseudo.path.name, pseudo.read = h.name, h.name, h.read
	if len(w.chain) != 2 {
		return pseudo // through other helpers: keep the caller's name
	}
	if h.path.global != "" {
		h.must = true
		return h
	}
	for j, arg := range w.site.common.Args {
		p := c.pathOf(arg, w.site.ctx)
		if !p.portable || !h.path.portable || p.param != h.path.param || len(p.steps) > len(h.path.steps) ||
			joinSteps(h.path.steps[:len(p.steps)]) != joinSteps(p.steps) {
			continue
		}
		q := c.pathOf(fn.Params[j], &funcCtx{fn: fn})
		for _, s := range h.path.steps[len(p.steps):] {
			q = q.extend(s, true)
		}
		return heldLock{path: q, name: h.name, read: h.read, must: true}
	}
	return pseudo
}

// helperNote is attached to a finding in a locked helper.
type helperNote struct {
	fn      *ssa.Function
	witness helperWitness
}

// describe renders why the helper runs under the lock, for a message.
func (n *helperNote) describe() string {
	if n.witness.site == nil {
		if n.witness.documented && len(n.witness.chain) == 0 {
			return n.fn.Name() + " is documented to run with it held"
		}
	}
	return n.fn.Name() + " runs with it held: " + strings.Join(n.witness.chain, " → ")
}

// dropCoveredChains removes the findings at callers of locked helpers whose
// chain goes through a helper that reports the call itself, and the helpers'
// findings where a finding of the helper's own analysis stands.
func dropCoveredChains(findings, helperFindings []finding, helpers map[*ssa.Function]helperWitness) []finding {
	viaHelper := func(o *outCall) bool {
		for _, fn := range o.via {
			if _, ok := helpers[fn]; ok {
				return true
			}
		}
		return false
	}
	// uncovered reports whether fd names something no helper reports,
	// switching a closure's inner finding to such an alternative if need be.
	var uncovered func(fd *finding) bool
	uncovered = func(fd *finding) bool {
		if fd.calls != nil && viaHelper(fd.calls) {
			return false
		}
		if fd.inner == nil {
			return true
		}
		candidates := append([]finding{*fd.inner}, fd.inner.alts...)
		for i := range candidates {
			if uncovered(&candidates[i]) {
				fd.inner = &candidates[i]
				return true
			}
		}
		return false
	}
	covered := func(fd *finding) bool { return !uncovered(fd) }
	var out []finding
	at := map[int]bool{}
	for _, fd := range findings {
		if !covered(&fd) {
			out = append(out, fd)
			at[int(fd.pos)] = true
		}
	}
	for _, fd := range helperFindings {
		if !covered(&fd) && !at[int(fd.pos)] {
			out = append(out, fd)
		}
	}
	return out
}
