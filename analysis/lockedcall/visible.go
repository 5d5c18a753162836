package lockedcall

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// A function value is "from outside" when code the package does not control
// may have chosen it. Three kinds of value look like that but are not, because
// only this package can set them, and it sets them to code it wrote:
//
//   - an unexported field or package variable whose every assignment in the
//     package stores visible code (a test hook set to nil or time.Now, a field
//     set to a method value such as c.clientHandshake);
//   - a parameter of an unexported function that is only ever called directly
//     from this package, with visible code as that argument at every call site.
//
// Visible code is a static function or method, or a closure that calls nothing
// from outside itself. Treating these as visible removed the bulk of the false
// positives seen on the standard library (see FINDINGS.md). The index below
// holds what the whole package stores and passes; it is built once, on the
// first question.
type storeIndex struct {
	fieldStores  map[*types.Var][]storedValue
	globalStores map[*ssa.Global][]storedValue
	escaped      map[any]bool // fields, package variables and functions used in ways not tracked
	callSites    map[*ssa.Function][]storedCall
	invoked      map[string]bool // method names called through an interface
	// pathStores are the stores below a struct value only the package
	// reaches (see ownedPathVisible), by root and fields ("g:bufPool.New");
	// wholeStores are the roots assigned as a whole from something else.
	pathStores  map[string][]storedValue
	elemStores  map[*types.Var][]storedValue // m.fns[k] = v, by the map field
	escapedMaps map[*types.Var]bool
	wholeStores map[string]bool
	pkg         *types.Package
	// atomicStores are the values stored in sync/atomic.Pointer fields (see
	// atomicSources); atomicEscaped, those handed out otherwise.
	// ifaceTargets are the interface types the package converts each of its
	// types to (see enterable).
	invokeSites map[string][]storedCall // interface method calls, by method name
	// fieldCalls are the calls of function values loaded from each field;
	// fieldCallsEscaped, the fields whose values also go elsewhere.
	fieldCalls        map[*types.Var][]storedCall
	fieldCallsEscaped map[*types.Var]bool
	atomicStores      map[*types.Var][]storedValue
	atomicEscaped     map[*types.Var]bool
	ifaceTargets      map[*types.TypeName][]types.Type

	verdicts   map[any]bool // memoized answers
	inProgress map[any]bool
	assumed    int // how many answers relied on a question still in progress

	// seen numbers the keys of fieldStores, globalStores, escaped and
	// callSites in the order the scan first met them (see inIndexOrder).
	seen map[any]int
}

type storedValue struct {
	v   ssa.Value
	ctx *funcCtx
}

type storedCall struct {
	args  []ssa.Value
	ctx   *funcCtx
	instr ssa.Instruction
}

func (c *checker) index() *storeIndex {
	if c.stores != nil {
		return c.stores
	}
	ix := &storeIndex{
		fieldStores:  map[*types.Var][]storedValue{},
		globalStores: map[*ssa.Global][]storedValue{},
		escaped:      map[any]bool{},
		callSites:    map[*ssa.Function][]storedCall{},
		invoked:      map[string]bool{},
		pathStores:   map[string][]storedValue{},
		elemStores:   map[*types.Var][]storedValue{},
		escapedMaps:  map[*types.Var]bool{},
		wholeStores:  map[string]bool{},
		pkg:          c.pass.Pkg,
		verdicts:     map[any]bool{},

		invokeSites:       map[string][]storedCall{},
		fieldCalls:        map[*types.Var][]storedCall{},
		fieldCallsEscaped: map[*types.Var]bool{},
		atomicStores:      map[*types.Var][]storedValue{},
		atomicEscaped:     map[*types.Var]bool{},
		ifaceTargets:      map[*types.TypeName][]types.Type{},
		inProgress:        map[any]bool{},
		seen:              map[any]int{},
	}
	c.stores = ix
	for _, fn := range c.funcs {
		ctx := c.standaloneCtx(fn)
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				ix.scan(instr, ctx)
			}
		}
	}
	return ix
}

// scan records what one instruction stores, calls, or lets escape.
func (ix *storeIndex) scan(instr ssa.Instruction, ctx *funcCtx) {
	ix.scanAtomic(instr, ctx)
	ix.scanFieldCalls(instr, ctx)
	switch instr := instr.(type) {
	case *ssa.Store:
		ix.scanPath(instr, ctx)
		switch addr := instr.Addr.(type) {
		case *ssa.FieldAddr:
			if v := fieldVar(addr.X.Type(), addr.Field); v != nil {
				ix.note(v)
				ix.fieldStores[v] = append(ix.fieldStores[v], storedValue{instr.Val, ctx})
			}
		case *ssa.Global:
			ix.note(addr)
			ix.globalStores[addr] = append(ix.globalStores[addr], storedValue{instr.Val, ctx})
		}
	case *ssa.MapUpdate:
		if f := mapField(instr.Map); f != nil {
			ix.elemStores[f] = append(ix.elemStores[f], storedValue{instr.Value, ctx})
		}
	case *ssa.UnOp:
		if f := mapField(instr); f != nil && !onlyIndexed(instr) {
			ix.escapedMaps[f] = true // the map goes where its stores are not seen
		}
	case *ssa.FieldAddr:
		// &x.f handed to anything but a load or a store can be written
		// through where the index cannot see it.
		if v := fieldVar(instr.X.Type(), instr.Field); v != nil && holdsCode(v.Type()) && !onlyLoadedOrStored(instr) {
			ix.note(v)
			ix.escaped[v] = true
		}
	case ssa.CallInstruction:
		common := instr.Common()
		if common.IsInvoke() {
			ix.invoked[common.Method.Name()] = true
			ix.invokeSites[common.Method.Name()] = append(ix.invokeSites[common.Method.Name()], storedCall{common.Args, ctx, instr})
		} else if fn, ok := common.Value.(*ssa.Function); ok && fn.Parent() == nil {
			ix.note(fn)
			ix.callSites[fn] = append(ix.callSites[fn], storedCall{common.Args, ctx, instr})
		}
	}
	var operands [8]*ssa.Value
	for i, op := range instr.Operands(operands[:0]) {
		switch v := (*op).(type) {
		case *ssa.Global:
			if holdsCode(v.Type().(*types.Pointer).Elem()) && !globalUseTracked(instr, v) {
				ix.note(v)
				ix.escaped[v] = true
			}
		case *ssa.Function:
			if call, ok := instr.(ssa.CallInstruction); ok && i == 0 && call.Common().Value == v {
				continue // the callee of a static call
			}
			ix.note(v)
			ix.escaped[v] = true
			if obj := v.Object(); obj != nil {
				ix.note(obj)
				ix.escaped[obj] = true // a method value or expression: a wrapper calls it
			}
		}
	}
}

// globalUseTracked reports whether instr only loads or stores the variable g.
func globalUseTracked(instr ssa.Instruction, g *ssa.Global) bool {
	switch instr := instr.(type) {
	case *ssa.Store:
		return instr.Addr == g && instr.Val != g
	case *ssa.UnOp:
		return instr.Op == token.MUL
	}
	return false
}

// onlyLoadedOrStored reports whether the address of a field is only loaded
// from and stored to.
func onlyLoadedOrStored(addr *ssa.FieldAddr) bool {
	for _, ref := range *addr.Referrers() {
		switch ref := ref.(type) {
		case *ssa.UnOp:
			if ref.Op != token.MUL {
				return false
			}
		case *ssa.Store:
			if ref.Addr != addr {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// holdsCode reports whether values of type t can carry code to call: function
// values and interface values.
func holdsCode(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Signature, *types.Interface:
		return true
	}
	return false
}

// fieldVar returns the declared field i of the struct that t is or points to.
func fieldVar(t types.Type, i int) *types.Var {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	s, ok := t.Underlying().(*types.Struct)
	if !ok || i >= s.NumFields() {
		return nil
	}
	return s.Field(i).Origin()
}

// fieldHoldsVisible reports whether an unexported field of this package only
// ever holds visible code.
//
// An exported field of an internal package of the module counts too, when
// the package stores only visible code in it and at least once (see
// moduleHook); so does one of another package of the module, by its
// VisibleHook fact, unless an imported package sets it to code from outside
// (an OutsideHooks fact).
func (c *checker) fieldHoldsVisible(v *types.Var) bool {
	if v == nil || !c.ownsHook(v) {
		return false
	}
	ix := c.index()
	stores := ix.fieldStores[v]
	return !ix.escaped[v] && c.verdict(v, func() bool {
		return c.allVisible(stores) && c.moduleHook(v, len(stores))
	})
}

// globalHoldsVisible is fieldHoldsVisible for a package variable.
func (c *checker) globalHoldsVisible(g *ssa.Global) bool {
	obj := g.Object()
	if g.Pkg == nil || obj == nil || !c.ownsHook(obj) {
		return false
	}
	ix := c.index()
	stores := ix.globalStores[g]
	return !ix.escaped[g] && c.verdict(g, func() bool {
		return c.allVisible(stores) && c.moduleHook(obj, len(stores))
	})
}

// paramHoldsVisible reports whether parameter i of a top-level function only
// ever receives visible code: the function is unexported, only called
// directly from this package, and called at least once, with visible code as
// that argument at every call site.
func (c *checker) paramHoldsVisible(fn *ssa.Function, i int) bool {
	obj, ok := fn.Object().(*types.Func)
	if !ok || (obj.Exported() && !unimportable(obj.Pkg())) || fn.Parent() != nil || !c.srcFuncs[fn] {
		return false
	}
	ix := c.index()
	if ix.escaped[fn] || ix.escaped[obj] || (obj.Signature().Recv() != nil && ix.invoked[obj.Name()]) {
		return false
	}
	return c.verdict(paramKey{fn, i}, func() bool {
		sites := ix.callSites[fn]
		if len(sites) == 0 {
			return false // no caller here: it may be called by linkname or from a test
		}
		values := make([]storedValue, 0, len(sites))
		for _, site := range sites {
			if i >= len(site.args) {
				return false
			}
			values = append(values, storedValue{site.args[i], site.ctx})
		}
		return c.allVisible(values)
	})
}

// verdict memoizes a question; a question that depends on itself counts as
// visible while it is being answered, since a cycle adds no outside code.
func (c *checker) verdict(key any, answer func() bool) bool {
	ix := c.index()
	if v, ok := ix.verdicts[key]; ok {
		return v
	}
	if ix.inProgress[key] {
		ix.assumed++
		return true
	}
	ix.inProgress[key] = true
	assumedBefore := ix.assumed
	v := answer()
	delete(ix.inProgress, key)
	// An answer that assumed an enclosing question visible is only final
	// once that question is answered; a "no" is final anyway.
	if !v || ix.assumed == assumedBefore || len(ix.inProgress) == 0 {
		ix.verdicts[key] = v
	}
	return v
}

func (c *checker) allVisible(values []storedValue) bool {
	for _, s := range values {
		if !c.isVisibleCode(s.v, s.ctx, 0) {
			return false
		}
	}
	return true
}

// isVisibleCode reports whether v is code the package wrote that calls
// nothing from outside.
func (c *checker) isVisibleCode(v ssa.Value, ctx *funcCtx, depth int) bool {
	target := c.classify(v, ctx)
	if target.out != visible {
		return false
	}
	for _, ref := range target.closures {
		if !c.closureIsSelfContained(ref, depth) {
			return false
		}
	}
	return true
}

// closureIsSelfContained reports whether a closure's body, and the closures it
// calls, call nothing from outside (goroutines aside).
func (c *checker) closureIsSelfContained(ref closureRef, depth int) bool {
	if depth > maxClosureDepth {
		return false
	}
	ctx := &funcCtx{fn: ref.fn, parent: ref.ctx, bindings: ref.bindings}
	for _, b := range ref.fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(ssa.CallInstruction)
			if _, isGo := instr.(*ssa.Go); !ok || isGo {
				continue
			}
			common := call.Common()
			if op, _ := lockOpOf(common); op != notLockOp {
				continue
			}
			if common.IsInvoke() {
				if c.interfaces && interfaceReceiverReported(c.classify(common.Value, ctx).out) {
					return false
				}
				continue
			}
			// A range-over-func loop before static calls: its body is part of
			// the closure even when the iterator is a static function.
			if yield := rangeYield(common); yield != nil {
				body := closureRef{fn: yield.Fn.(*ssa.Function), bindings: yield.Bindings, ctx: ctx}
				if !c.isVisibleCode(common.Value, ctx, depth+1) || !c.closureIsSelfContained(body, depth+1) {
					return false
				}
				continue
			}
			if staticTopLevel(common) != nil {
				continue
			}
			if !c.isVisibleCode(common.Value, ctx, depth+1) {
				return false
			}
		}
	}
	return true
}
