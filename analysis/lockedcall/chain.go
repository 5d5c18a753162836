package lockedcall

import (
	"fmt"
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// CallSummary is the fact lockedcall exports for a function whose caller
// chooses code it runs (a parameter, or a field reached from one, such as the
// receiver's onEvict), or that returns only code its package wrote. It lets a
// call of the function under a lock, in another package, be checked as a call
// in the function's own package is:
//
//	c.lru.Add(k, v) // call of c.lru.Add (it calls c.lru.onEvict, a field: Add → removeOldest → removeElement → c.onEvict) ...
//
// Outside calls that the function finds by itself (an element of its own
// table, a package variable) are its package's business and are not carried.
type CallSummary struct {
	Calls          []Callback
	VisibleResults []int // indexes of function-typed results that only hold visible code
}

// Callback is one call of code from outside that a function makes as it runs.
type Callback struct {
	Param  int      // the parameter (0 is a method's receiver) the code is reached from
	Steps  []string // fields from the parameter to the code; none for the parameter itself
	Origin int      // the origin of the value where it is called
	Text   string   // the called value, as the function's package spells it
	Chain  []string // the functions called on the way, ending with the call
	// Default says that the field called holds its package's own code
	// unless one of SetBy (types.Func.FullName) is called: its setters.
	Default bool
	SetBy   []string
}

// AFact marks CallSummary as an analysis fact.
func (*CallSummary) AFact() {}

// String renders the fact as the tests expect it, e.g.
// "calls param 1 (doSlow → f)" or "calls param 0 field onEvict (removeOldest → c.onEvict)".
func (f *CallSummary) String() string {
	var parts []string
	for _, cb := range f.Calls {
		where := fmt.Sprintf("param %d", cb.Param)
		if len(cb.Steps) > 0 {
			where += " field " + strings.Join(cb.Steps, ".")
		}
		text := "calls " + where + " (" + strings.Join(cb.Chain, " → ") + ")"
		if cb.Default {
			text += " unless set by " + strings.Join(cb.SetBy, ", ")
		}
		parts = append(parts, text)
	}
	for _, i := range f.VisibleResults {
		parts = append(parts, fmt.Sprintf("result %d is visible code", i))
	}
	return strings.Join(parts, "; ")
}

// summaryFacts is off only in tests of rules within one package (see
// export_test.go).
var summaryFacts = true

// exportSummary exports fn's CallSummary fact, if it has anything to say.
func (c *checker) exportSummary(fn *ssa.Function) {
	obj, ok := fn.Object().(*types.Func)
	if !summaryFacts || !ok || obj.Pkg() != c.pass.Pkg || fn.Parent() != nil {
		return
	}
	var fact CallSummary
	for _, o := range c.summaryOf(fn) {
		if o.param >= 0 {
			cb := Callback{Param: o.param, Steps: o.steps, Origin: int(o.out), Text: o.text, Chain: o.chain, Default: o.defaulted, SetBy: o.setBy}
			if !cb.Default {
				cb.SetBy, cb.Default = c.fieldDefault(fn, o)
			}
			fact.Calls = append(fact.Calls, cb)
		}
	}
	results := fn.Signature.Results()
	for i := range results.Len() {
		if _, isFunc := results.At(i).Type().Underlying().(*types.Signature); isFunc && c.resultVisible(fn, i) {
			fact.VisibleResults = append(fact.VisibleResults, i)
		}
	}
	if len(fact.Calls) > 0 || len(fact.VisibleResults) > 0 {
		c.pass.ExportObjectFact(obj, &fact)
	}
}

// importedSummary returns the CallSummary fact of a function of another
// package, or nil.
func (c *checker) importedSummary(fn *ssa.Function) *CallSummary {
	// Wrappers, thunks and bound methods take other arguments than the
	// declared function: its fact would not apply to them.
	declared := fn.Synthetic == "" || fn.Synthetic == "from type information"
	obj, ok := fn.Object().(*types.Func)
	if !ok || !declared || obj.Pkg() == c.pass.Pkg {
		return nil
	}
	if s, ok := c.imported[obj]; ok {
		return s
	}
	var fact CallSummary
	var s *CallSummary
	if c.pass.ImportObjectFact(obj, &fact) {
		s = &fact
	}
	c.imported[obj] = s
	return s
}

// importedCalls is a function's summary from its fact.
func (c *checker) importedCalls(fn *ssa.Function) []outCall {
	fact := c.importedSummary(fn)
	if fact == nil {
		return nil
	}
	out := make([]outCall, len(fact.Calls))
	for i, cb := range fact.Calls {
		out[i] = outCall{param: cb.Param, steps: cb.Steps, out: origin(cb.Origin), text: cb.Text, chain: cb.Chain, defaulted: cb.Default, setBy: cb.SetBy}
	}
	return out
}

// chainCall reports a static call made while locks are held whose callee, with
// the call's arguments, calls code from outside.
func (f *flow) chainCall(common *ssa.CallCommon, locks []heldLock, kind findingKind) {
	if len(locks) == 0 || !f.reporting {
		return
	}
	if op, _ := lockOpOf(common); op != notLockOp {
		return
	}
	g := staticTopLevel(common)
	if g == nil {
		return
	}
	for _, e := range f.c.summaryOf(g) {
		for _, m := range f.c.atCall(e, g, common, f.ctx, f.ctx.depth) {
			f.report(finding{kind: kind, pos: common.Pos(), out: m.out, calls: &m, locks: locks})
			return // one finding per call: the first chain says what to fix
		}
	}
}

// describeChain renders what a chained call runs, for a message: "it calls
// c.onEvict, a field: removeOldest → removeElement → c.onEvict".
func describeChain(o *outCall) string {
	return fmt.Sprintf("it calls %s, %s: %s", o.text, o.out.describe(), strings.Join(o.chain, " → "))
}
