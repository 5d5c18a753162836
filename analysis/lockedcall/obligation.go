package lockedcall

import (
	"fmt"
	"go/types"
	"path/filepath"
	"strings"
)

// Obligations is the fact lockedcall exports, in an internal package, for a
// way into the package through which comes a function value that the package
// calls while it holds a lock: a parameter of an exported function or method
// (and of the package's interface methods that the method implements), or an
// exported field or package variable; and, in a package others can import,
// for an exported package variable that only its initializer stores (see
// initOnlyVars). The package does not report the call, since only its
// module can pass or store that value (or, for such a variable, whoever
// assigns it) and it cannot see what they pass; the packages that call the
// function or store in the field or variable check each call and store
// instead (see checkObligations):
//
//	newTr, err := transport.NewHTTP2Client(ctx, cc.ctx, addr, copts, onClose) // silent when onClose is the caller's own code
//
// One obligation is kept per parameter: each says what a caller must not pass.
type Obligations struct {
	Calls []Obligation
}

// Obligation is a call of what comes in through one way into a package, made
// while the package holds a lock.
type Obligation struct {
	// Param is the parameter whose argument is called (0 is a method's
	// receiver); -1 for what is stored in a field or package variable.
	Param int
	Pkg   string   // the name of the package that calls it
	Where string   // the call under the lock, as "file.go:line"
	Text  string   // the value called there, as that package spells it
	Locks string   // the locks held there, as a message puts them: "t.mu is held"
	Chain []string // the functions on the way, from the one that holds the lock to the call
	Via   []string // the module's functions that pass it on to the package, outermost first
	// Held are the mutexes held there on every path that have an id (see
	// Acquisition.ID): code of the module's that locks one of them again
	// where it is passed or stored is a proven re-entry.
	Held []HeldMutex
}

// HeldMutex is a mutex an obligation's call runs under.
type HeldMutex struct {
	ID   string
	Name string
	Read bool
}

// AFact marks Obligations as an analysis fact.
func (*Obligations) AFact() {}

// String renders the fact as the tests expect it, e.g.
// "param 1 runs in Filter → fn while p.mu is held".
func (f *Obligations) String() string {
	parts := make([]string, len(f.Calls))
	for i, ob := range f.Calls {
		where := "stored value"
		if ob.Param >= 0 {
			where = fmt.Sprintf("param %d", ob.Param)
		}
		if len(ob.Via) > 0 {
			where += " via " + strings.Join(ob.Via, " → ")
		}
		parts[i] = fmt.Sprintf("%s runs in %s while %s", where, strings.Join(ob.Chain, " → "), ob.Locks)
	}
	return strings.Join(parts, "; ")
}

// passedOn is the obligation of a function of another package that passes
// what it gets as parameter param on to this one's way in.
func (ob Obligation) passedOn(param int, via string) Obligation {
	ob.Param = param
	ob.Via = joinChains([]string{via}, ob.Via)
	return ob
}

// obligationSet collects the obligations a package leaves, by way in, in the
// order they were found.
type obligationSet struct {
	objs  []types.Object
	byObj map[types.Object][]Obligation
}

// add records ob on obj, unless obj already carries one for that parameter.
func (s *obligationSet) add(obj types.Object, ob Obligation) {
	if s.byObj == nil {
		s.byObj = map[types.Object][]Obligation{}
	}
	list, seen := s.byObj[obj]
	for _, o := range list {
		if o.Param == ob.Param {
			return
		}
	}
	if !seen {
		s.objs = append(s.objs, obj)
	}
	s.byObj[obj] = append(list, ob)
}

// deferring reports whether the package leaves obligations rather than
// reporting what comes in through its exported API: it is internal, and
// facts are exported (they are not in tests of rules within one package).
func (c *checker) deferring() bool {
	return summaryFacts && isInternal(c.pass.Pkg.Path())
}

// deferToCallers removes, in an internal package, the findings whose called
// value can only be the package's own code or come in through its exported
// API, and records an obligation on each way in instead. A finding that a
// directive suppresses stays where it is, suppressed: its callers are not
// asked again.
func (c *checker) deferToCallers(findings []finding) []finding {
	if !c.deferring() && !c.defersVars() {
		return findings
	}
	dirs := c.directives()
	var kept []finding
	for i := range findings {
		fd := &findings[i]
		if dirs.suppresses(c.pass.Fset.Position(c.reportPos(fd))) {
			kept = append(kept, *fd)
			continue
		}
		src := c.findingSources(fd)
		if !c.deferrable(src) {
			kept = append(kept, *fd)
			continue
		}
		ob := c.obligationFor(fd)
		for _, e := range src.entries {
			ob.Param = e.param
			c.obligations.add(e.obj, ob)
		}
	}
	return kept
}

// findingSources is sources for what a finding finally calls.
func (c *checker) findingSources(fd *finding) sourced {
	for fd.inner != nil {
		fd = fd.inner
	}
	switch o := fd.calls; {
	case fd.method != "":
		return notSourced // an interface method call: its receiver is not traced
	case o != nil && o.val == nil:
		return notSourced // another package's callee finds it itself
	case o != nil && len(o.valSteps) > 0:
		return c.fieldSources(fieldAt(o.val.Type(), o.valSteps))
	case o != nil:
		return c.sources(o.val, o.vctx)
	case fd.val != nil:
		return c.sources(fd.val, fd.vctx)
	}
	return notSourced
}

// fieldAt returns the field that steps (field names, and "*" for a
// dereference) reach from a value of type t.
func fieldAt(t types.Type, steps []string) *types.Var {
	var f *types.Var
	for _, step := range steps {
		if step == "*" {
			continue
		}
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		s, ok := t.Underlying().(*types.Struct)
		if !ok {
			return nil
		}
		f = nil
		for i := range s.NumFields() {
			if s.Field(i).Name() == step {
				f = s.Field(i).Origin()
			}
		}
		if f == nil {
			return nil
		}
		t = f.Type()
	}
	return f
}

// obligationFor describes a deferred finding as an obligation.
func (c *checker) obligationFor(fd *finding) Obligation {
	pos := c.pass.Fset.Position(c.reportPos(fd))
	ob := Obligation{
		Pkg:   c.pass.Pkg.Name(),
		Where: fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line),
		Locks: describeLocks(fd.locks),
	}
	for _, h := range fd.locks {
		if h.must && h.path.id != "" {
			ob.Held = append(ob.Held, HeldMutex{ID: h.path.id, Name: h.name, Read: h.read})
		}
	}
	if fd.where != nil {
		ob.Chain = []string{topLevel(fd.where).Name()}
	}
	for d := fd; d != nil; d = d.inner {
		switch {
		case d.calls != nil:
			ob.Chain, ob.Text = joinChains(ob.Chain, d.calls.chain), d.calls.text
		case d.inner == nil:
			_, _, ob.Text = c.subject(d)
			ob.Chain = joinChains(ob.Chain, []string{ob.Text})
		default:
			ob.Chain = joinChains(ob.Chain, []string{c.calleeText(d.pos)})
		}
	}
	return ob
}

// exportObligations exports the obligations found, on each way in, and on
// the methods of the package's interfaces that a method with obligations
// implements: the module calls transport.ServerTransport's HandleStreams, not
// the http2Server's.
func (c *checker) exportObligations() {
	s := &c.obligations
	for _, obj := range append([]types.Object(nil), s.objs...) {
		fn, ok := obj.(*types.Func)
		if !ok {
			continue
		}
		for _, m := range c.interfaceMethods(fn) {
			for _, ob := range s.byObj[obj] {
				s.add(m, ob)
			}
		}
	}
	for _, obj := range s.objs {
		c.pass.ExportObjectFact(obj, &Obligations{Calls: s.byObj[obj]})
	}
}

// interfaceMethods returns the methods of the package's interfaces that the
// method fn implements.
func (c *checker) interfaceMethods(fn *types.Func) []types.Object {
	recv := fn.Signature().Recv()
	if recv == nil {
		return nil
	}
	named := namedOf(recv.Type())
	if named == nil || named.TypeParams().Len() > 0 {
		return nil
	}
	var out []types.Object
	scope := c.pass.Pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		iface, ok := tn.Type().Underlying().(*types.Interface)
		if !ok || !(types.Implements(named, iface) || types.Implements(types.NewPointer(named), iface)) {
			continue
		}
		for i := range iface.NumMethods() {
			if m := iface.Method(i); m.Name() == fn.Name() && m.Pkg() == c.pass.Pkg {
				out = append(out, m)
			}
		}
	}
	return out
}
