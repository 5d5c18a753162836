package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// funcCtx is a function being analyzed together with what is known about where
// its free variables and parameters come from.
type funcCtx struct {
	fn *ssa.Function
	// parent is the context of the function that made the closure fn;
	// bindings are the values it bound to fn's free variables there.
	parent   *funcCtx
	bindings []ssa.Value
	// caller is the context of a call site that is being analyzed, and args
	// the arguments there; nil when fn's callers are unknown, and then fn's
	// parameters come from outside.
	caller *funcCtx
	args   []ssa.Value
	depth  int
}

// origin says where a called function value comes from.
type origin int

const (
	visible      origin = iota // code the function can see: static, nil, or a local closure
	fromParam                  // a parameter
	fromField                  // a struct field
	fromElement                // a map, slice or array element
	fromGlobal                 // a package variable
	fromCall                   // the result of a call
	fromChannel                // received from a channel
	fromCaptured               // a captured variable of an unknown enclosing function
	fromUnknown                // something else the analysis cannot see through
)

// describe renders an origin for a message, e.g. "a parameter".
func (o origin) describe() string {
	switch o {
	case fromParam:
		return "a parameter"
	case fromField:
		return "a field"
	case fromElement:
		return "a map or slice element"
	case fromGlobal:
		return "a package variable"
	case fromCall:
		return "the result of a call"
	case fromChannel:
		return "a value received from a channel"
	case fromCaptured:
		return "a captured variable"
	case fromUnknown:
		return "a value from outside"
	}
	return "visible code"
}

// closureRef is a local closure that a call may run: its function, and the
// context in which it was made, where its free variables resolve.
type closureRef struct {
	fn       *ssa.Function
	bindings []ssa.Value
	ctx      *funcCtx
}

// callee is what a dynamic call may run: code from outside (out != visible),
// and local closures, whose bodies the analysis follows.
type callee struct {
	out      origin
	closures []closureRef
}

func (c callee) merge(d callee) callee {
	if c.out == visible {
		c.out = d.out
	}
	c.closures = append(c.closures, d.closures...)
	return c
}

// classify says where the function value v, seen from ctx, comes from.
func (c *checker) classify(v ssa.Value, ctx *funcCtx) callee {
	return c.classifyDepth(v, ctx, map[ssa.Value]bool{}, 0)
}

func (c *checker) classifyDepth(v ssa.Value, ctx *funcCtx, seen map[ssa.Value]bool, depth int) callee {
	if depth > maxPathDepth || seen[v] {
		return callee{}
	}
	seen[v] = true
	switch v := v.(type) {
	case *ssa.Function:
		if v.Parent() != nil {
			return callee{closures: []closureRef{{fn: v, ctx: ctx}}}
		}
		return callee{}
	case *ssa.MakeClosure:
		return callee{closures: []closureRef{{fn: v.Fn.(*ssa.Function), bindings: v.Bindings, ctx: ctx}}}
	case *ssa.Const, *ssa.Builtin:
		return callee{}
	case *ssa.Parameter:
		i := paramIndex(ctx.fn, v)
		switch {
		case i >= 0 && ctx.caller != nil:
			return c.classifyDepth(ctx.args[i], ctx.caller, seen, depth+1)
		case i >= 0 && ctx.parent == nil && c.paramHoldsVisible(ctx.fn, i):
			return callee{}
		case i >= 0 && ctx.fn.Parent() != nil:
			// A func literal called once, where it is made:
			// defer func(f func()) { hook = f }(hook).
			if arg := onlyCallArg(ctx.fn, i); arg != nil {
				parent := ctx.parent
				if parent == nil {
					parent = c.standaloneCtx(ctx.fn.Parent())
				}
				return c.classifyDepth(arg, parent, seen, depth+1)
			}
		}
		return callee{out: fromParam}
	case *ssa.FreeVar:
		if i := freeVarIndex(ctx.fn, v); i >= 0 && ctx.parent != nil {
			return c.classifyDepth(ctx.bindings[i], ctx.parent, seen, depth+1)
		}
		return callee{out: fromCaptured}
	case *ssa.UnOp:
		switch v.Op {
		case token.MUL:
			return c.classifyLoad(v.X, ctx, seen, depth+1)
		case token.ARROW:
			return callee{out: fromChannel}
		}
	case *ssa.Field:
		if c.fieldHoldsVisible(fieldVar(v.X.Type(), v.Field)) {
			return callee{}
		}
		return callee{out: fromField}
	case *ssa.Lookup:
		if c.mapHoldsVisible(v.X) || c.tableVisible(v.X) {
			return callee{}
		}
		return callee{out: fromElement}
	case *ssa.Index:
		if c.tableVisible(v.X) {
			return callee{}
		}
		return callee{out: fromElement}
	case *ssa.Call:
		return c.classifyResult(v, 0, ctx, seen, depth)
	case *ssa.Extract:
		switch t := v.Tuple.(type) {
		case *ssa.Call:
			return c.classifyResult(t, v.Index, ctx, seen, depth)
		case *ssa.Lookup:
			if c.mapHoldsVisible(t.X) || c.tableVisible(t.X) {
				return callee{}
			}
			return callee{out: fromElement}
		case *ssa.Next:
			if r, ok := t.Iter.(*ssa.Range); ok && v.Index == 2 && (c.mapHoldsVisible(r.X) || c.tableVisible(r.X)) {
				return callee{}
			}
			return callee{out: fromElement}
		case *ssa.UnOp:
			return callee{out: fromChannel}
		case *ssa.TypeAssert:
			return c.classifyDepth(t.X, ctx, seen, depth+1)
		}
	case *ssa.Phi:
		var out callee
		for i, e := range v.Edges {
			if nilOnEdge(v, i) {
				continue // if f != nil { f = visible }: f is nil where it flows in
			}
			out = out.merge(c.classifyDepth(e, ctx, seen, depth+1))
		}
		return out
	case *ssa.TypeAssert:
		return c.classifyDepth(v.X, ctx, seen, depth+1)
	case *ssa.MakeInterface:
		if _, isFunc := v.X.Type().Underlying().(*types.Signature); !isFunc {
			return callee{} // the dynamic type is known: its methods are static code
		}
		return c.classifyDepth(v.X, ctx, seen, depth+1)
	case *ssa.ChangeType:
		return c.classifyDepth(v.X, ctx, seen, depth+1)
	case *ssa.Convert:
		return c.classifyDepth(v.X, ctx, seen, depth+1)
	case *ssa.ChangeInterface:
		return c.classifyDepth(v.X, ctx, seen, depth+1)
	}
	return callee{out: fromUnknown}
}

// classifyLoad says where a value loaded from addr comes from.
func (c *checker) classifyLoad(addr ssa.Value, ctx *funcCtx, seen map[ssa.Value]bool, depth int) callee {
	switch a := addr.(type) {
	case *ssa.Global:
		if c.globalHoldsVisible(a) {
			return callee{}
		}
		return callee{out: fromGlobal}
	case *ssa.FieldAddr:
		if c.fieldHoldsVisible(fieldVar(a.X.Type(), a.Field)) {
			return callee{}
		}
		return callee{out: fromField}
	case *ssa.IndexAddr:
		if c.tableVisible(a.X) {
			return callee{}
		}
		if elems, ok := localSliceElems(a.X, 0); ok {
			var out callee
			for _, e := range elems {
				out = out.merge(c.classifyDepth(e, ctx, seen, depth+1))
			}
			return out
		}
		if elems, ok := c.capturedSliceElems(a.X, ctx); ok {
			var out callee
			for _, e := range elems {
				out = out.merge(c.classifyDepth(e.v, e.ctx, seen, depth+1))
			}
			return out
		}
		return callee{out: fromElement}
	case *ssa.Alloc:
		// A local variable: whatever was assigned to it in its function.
		var out callee
		for _, stored := range allocStores(a) {
			out = out.merge(c.classifyDepth(stored, ctx, seen, depth+1))
		}
		return out
	case *ssa.FreeVar:
		if i := freeVarIndex(ctx.fn, a); i >= 0 && ctx.parent != nil {
			return c.classifyLoad(ctx.bindings[i], ctx.parent, seen, depth+1)
		}
		return callee{out: fromCaptured}
	case *ssa.Parameter:
		if i := paramIndex(ctx.fn, a); i >= 0 && ctx.caller != nil {
			return c.classifyLoad(ctx.args[i], ctx.caller, seen, depth+1)
		}
		return callee{out: fromParam}
	}
	return callee{out: fromUnknown}
}

// classifyResult says where a function value returned by a call comes from.
// Such a value is code from outside, except the cancel functions of package
// context, what sync.OnceFunc and its kin wrap, and an iterator that a static call
// builds from no function values (maps.Keys(m), slices.Values(s), t.All()):
// it can only run code reachable by static calls, which the analysis treats as
// visible, and the loop body, which it analyzes as part of the function.
func (c *checker) classifyResult(call *ssa.Call, index int, ctx *funcCtx, seen map[ssa.Value]bool, depth int) callee {
	common := call.Common()
	if load, ok := common.Value.(*ssa.UnOp); ok && load.Op == token.MUL {
		if g, ok := load.X.(*ssa.Global); ok && c.hookResultsVisible(g, index) {
			return callee{} // a hook that only returns the module's code
		}
	}
	if fn := common.StaticCallee(); fn != nil {
		if origin := fn.Origin(); origin != nil {
			fn = origin
		}
		if c.resultVisible(fn, index) {
			return callee{} // a function that returns only code its package wrote
		}
		switch qualifiedName(fn) {
		case "context.WithCancel", "context.WithCancelCause", "context.WithDeadline",
			"context.WithDeadlineCause", "context.WithTimeout", "context.WithTimeoutCause",
			"context.AfterFunc", "os/signal.NotifyContext":
			// Cancel and stop functions: they call no code of the caller's
			// (beyond Context methods, which are interface calls).
			return callee{}
		case "sync.OnceFunc", "sync.OnceValue", "sync.OnceValues":
			// The result calls its argument, once.
			return c.classifyDepth(common.Args[0], ctx, seen, depth+1)
		}
	}
	if common.IsInvoke() && c.implsReturnVisible(common.Method, index) {
		return callee{} // every implementation of the module's interface returns its own code
	}
	if common.StaticCallee() == nil || !isIteratorSignature(call.Type()) {
		return callee{out: fromCall}
	}
	for _, arg := range common.Args {
		if _, isFunc := arg.Type().Underlying().(*types.Signature); isFunc {
			return callee{out: fromCall}
		}
	}
	return callee{}
}

// qualifiedName returns "import/path.Name" for a package-level function.
func qualifiedName(fn *ssa.Function) string {
	obj := fn.Object()
	if obj == nil || obj.Pkg() == nil {
		return ""
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

// isIteratorSignature reports whether t is a range-over-func iterator type:
// func(yield func(...) bool).
func isIteratorSignature(t types.Type) bool {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || sig.Params().Len() != 1 || sig.Results().Len() != 0 {
		return false
	}
	yield, ok := sig.Params().At(0).Type().Underlying().(*types.Signature)
	if !ok || yield.Results().Len() != 1 {
		return false
	}
	basic, ok := yield.Results().At(0).Type().Underlying().(*types.Basic)
	return ok && basic.Kind() == types.Bool
}

// interfaceReceiverReported reports whether an interface method call on a value
// of this origin is reported under -interfaces: receivers that come in as
// parameters, fields, package variables or elements, whose dynamic type the
// caller chose. Results of calls are left out: they are mostly values the
// callee built (errors, reflect types), and reporting them is noise.
func interfaceReceiverReported(o origin) bool {
	switch o {
	case fromParam, fromField, fromGlobal, fromElement, fromCaptured:
		return true
	}
	return false
}
