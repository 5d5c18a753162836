package lockedcall

import (
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A dependency's function field that its constructor fills with its own
// default, and that other code can only change through the dependency's
// setters, holds the dependency's code until someone calls a setter:
//
//	func newConn(...) *Conn { c := &Conn{...}; c.SetPongHandler(nil); return c } // h == nil: its own no-op
//	func (c *Conn) NextReader() (...) { ... c.handlePong(...) ... }
//
// NextReader's CallSummary fact names c.handlePong, a field reached from its
// receiver. Where a module calls NextReader under its lock and never calls
// SetPongHandler with code from outside, the field holds gorilla/websocket's
// own handler, and the call is not reported. The rule:
//
//   - the dependency's package exports, with the callback, the functions whose
//     parameters are the only ways into the field (Callback.SetBy): the field is
//     unexported, its address never leaves the package, and every store in it
//     is the package's own visible code or one of those parameters;
//   - each such function carries a FieldSetter fact naming the parameters;
//   - a package of another module that calls the chain is silent about it
//     unless it, or a package of its module that it imports, calls one of
//     those functions with something other than visible code at such a
//     parameter, takes it as a value, or calls an interface method of that
//     name that takes a function (its SetterCalls fact).

// FieldSetter is the fact lockedcall exports for a function through whose
// parameters other packages fill an unexported function field that the
// package calls (the only ways in, with its own defaults): gorilla/websocket's
// (*Conn).SetPongHandler.
type FieldSetter struct {
	Params []int    // the parameters stored in the fields (0 is a method's receiver)
	Fields []string // the fields, as the package spells them
}

// AFact marks FieldSetter as an analysis fact.
func (*FieldSetter) AFact() {}

func (f *FieldSetter) String() string {
	return "sets " + strings.Join(f.Fields, ", ")
}

// SetterCalls is the package fact lockedcall exports for a package that
// calls a function with a FieldSetter fact with code that may be from
// outside, takes one as a value, or calls an interface method of a setter's
// name with a function, or that imports a package of its module that does: where it is
// imported, the fields those functions set may hold that code.
type SetterCalls struct {
	Funcs   []string // the functions, by types.Func.FullName
	Methods []string // interface methods of a setter's name called with a function value
}

// AFact marks SetterCalls as an analysis fact.
func (*SetterCalls) AFact() {}

func (f *SetterCalls) String() string {
	parts := append([]string(nil), f.Funcs...)
	for _, m := range f.Methods {
		parts = append(parts, "interface method "+m)
	}
	return "calls setters " + strings.Join(parts, ", ")
}

// setters is what settersCalled knows: the setters this package and the
// module's packages it imports call.
type setters struct {
	funcs, methods map[string]bool
}

// fieldDefault returns the functions whose parameters are the only ways
// into the field that callback o of fn calls, when that field is an
// unexported function field of this package that otherwise holds only its
// own code; ok is false when anything else may be stored there.
func (c *checker) fieldDefault(fn *ssa.Function, o outCall) (setBy []string, ok bool) {
	if o.param < 0 || o.param >= len(fn.Params) || len(o.steps) == 0 {
		return nil, false
	}
	f := fieldAt(fn.Params[o.param].Type(), o.steps)
	if f == nil || f.Pkg() != c.pass.Pkg || f.Exported() || !holdsCode(f.Type()) {
		return nil, false
	}
	s := c.fieldSources(f)
	if !s.ok {
		return nil, false
	}
	for _, e := range s.entries {
		obj, isFunc := e.obj.(*types.Func)
		if !isFunc || e.param < 0 {
			return nil, false // an exported field or variable: anyone may store there
		}
		setBy = append(setBy, obj.FullName())
		if c.fieldSetters == nil {
			c.fieldSetters = map[*types.Func]*FieldSetter{}
		}
		fs := c.fieldSetters[obj]
		if fs == nil {
			fs = &FieldSetter{}
			c.fieldSetters[obj] = fs
		}
		if !slices.Contains(fs.Params, e.param) {
			fs.Params = append(fs.Params, e.param)
		}
		if !slices.Contains(fs.Fields, f.Name()) {
			fs.Fields = append(fs.Fields, f.Name())
		}
	}
	slices.Sort(setBy)
	return slices.Compact(setBy), true
}

// exportFieldSetters exports the FieldSetter facts fieldDefault found.
func (c *checker) exportFieldSetters() {
	for obj, fs := range c.fieldSetters {
		slices.Sort(fs.Params)
		c.pass.ExportObjectFact(obj, fs)
	}
}

// defaultHeld reports whether the field that e, a callback of g's, calls
// still holds g's package's own code where this package calls g: g is of
// another module, and no setter of the field is called from this package or
// the module's packages it imports.
func (c *checker) defaultHeld(e outCall, g *ssa.Function) bool {
	if !e.defaulted || g.Pkg == nil || c.sameModule(g.Pkg.Pkg.Path()) {
		return false
	}
	s := c.setterCalls()
	for _, name := range e.setBy {
		method := name[strings.LastIndex(name, ".")+1:]
		if s.funcs[name] || (strings.HasPrefix(name, "(") && s.methods[method]) {
			return false
		}
	}
	return true
}

// setterCalls returns, built on first use, the setters called by this
// package (with code that may be from outside) and by the module's packages
// it imports, by their SetterCalls facts.
func (c *checker) setterCalls() setters {
	if c.setterSet.funcs != nil {
		return c.setterSet
	}
	s := setters{funcs: map[string]bool{}, methods: map[string]bool{}}
	ix := c.index()
	for _, fn := range inIndexOrder(ix, ix.callSites) {
		sites := ix.callSites[fn]
		fs, obj := c.fieldSetterOf(fn)
		if fs == nil {
			continue
		}
		for _, site := range sites {
			for _, i := range fs.Params {
				if i >= len(site.args) || !c.isVisibleCode(site.args[i], site.ctx, 0) {
					s.funcs[obj.FullName()] = true
				}
			}
		}
	}
	for _, k := range inIndexOrder(ix, ix.escaped) {
		if fn, ok := k.(*ssa.Function); ok {
			if fs, obj := c.fieldSetterOf(fn); fs != nil {
				s.funcs[obj.FullName()] = true
			}
		}
	}
	var setterMethods map[string]bool
	for _, name := range sortedKeys(ix.invokeSites) {
		sites := ix.invokeSites[name]
		for _, site := range sites {
			if !takesFunc(site.args) {
				continue
			}
			if setterMethods == nil {
				setterMethods = c.setterMethodNames()
			}
			if setterMethods[name] {
				s.methods[name] = true
			}
		}
	}
	for _, pf := range c.pass.AllPackageFacts() {
		if f, ok := pf.Fact.(*SetterCalls); ok && pf.Package != c.pass.Pkg && c.sameModule(pf.Package.Path()) {
			for _, n := range f.Funcs {
				s.funcs[n] = true
			}
			for _, m := range f.Methods {
				s.methods[m] = true
			}
		}
	}
	c.setterSet = s
	return s
}

// fieldSetterOf returns the FieldSetter fact of a function of another
// package, and the function's object.
func (c *checker) fieldSetterOf(fn *ssa.Function) (*FieldSetter, *types.Func) {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	obj, ok := fn.Object().(*types.Func)
	if !ok || obj.Pkg() == nil || c.sameModule(obj.Pkg().Path()) {
		return nil, nil // only a dependency's defaults are trusted
	}
	var fs FieldSetter
	if !c.pass.ImportObjectFact(obj, &fs) {
		return nil, nil
	}
	return &fs, obj
}

// setterMethodNames returns the names of the methods with a FieldSetter fact
// in the packages this one imports, directly or not.
func (c *checker) setterMethodNames() map[string]bool {
	names := map[string]bool{}
	for _, of := range c.pass.AllObjectFacts() {
		if _, ok := of.Fact.(*FieldSetter); ok {
			if fn, ok := of.Object.(*types.Func); ok && fn.Signature().Recv() != nil {
				names[fn.Name()] = true
			}
		}
	}
	return names
}

// takesFunc reports whether an interface method call passes a function value.
func takesFunc(args []ssa.Value) bool {
	for _, a := range args {
		if _, ok := a.Type().Underlying().(*types.Signature); ok {
			return true
		}
	}
	return false
}

// exportSetterCalls exports the package's SetterCalls fact.
func (c *checker) exportSetterCalls() {
	s := c.setterCalls()
	if len(s.funcs) == 0 && len(s.methods) == 0 {
		return
	}
	fact := &SetterCalls{}
	for n := range s.funcs {
		fact.Funcs = append(fact.Funcs, n)
	}
	for m := range s.methods {
		fact.Methods = append(fact.Methods, m)
	}
	slices.Sort(fact.Funcs)
	slices.Sort(fact.Methods)
	c.pass.ExportPackageFact(fact)
}
