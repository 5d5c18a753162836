package lockedcall

import (
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A dependency's function field that its constructor fills with its own
// default, and that other code can only change through the dependency's
// setters or its config struct's fields, holds the dependency's code until
// someone calls a setter or fills that config field:
//
//	func newConn(...) *Conn { c := &Conn{...}; c.SetPongHandler(nil); return c } // h == nil: its own no-op
//	func (c *Conn) NextReader() (...) { ... c.handlePong(...) ... }
//
//	func NewCache(cfg *Config) *Cache {
//		c := &Cache{keyToHash: cfg.KeyToHash}
//		if c.keyToHash == nil {
//			c.keyToHash = defaultHash // a Config without KeyToHash: its own
//		}
//		...
//	}
//
// NextReader's CallSummary fact names c.handlePong, a field reached from its
// receiver. Where a module calls NextReader under its lock and never calls
// SetPongHandler with code from outside, the field holds gorilla/websocket's
// own handler, and the call is not reported; so for the cache where the
// module never stores code from outside in Config.KeyToHash. The rule:
//
//   - the dependency's package exports, with the callback, the ways into the
//     field (Callback.SetBy): the functions whose parameters, and the
//     exported fields (a config struct's) whose values, are the only ways
//     in: the field is unexported, its address never leaves the package,
//     and every store in it is the package's own visible code, one of those
//     parameters, or a value loaded from one of those fields;
//   - each such function or field carries a FieldSetter fact;
//   - a package of another module that calls the chain is silent about it
//     unless it, or a package of its module that it imports, calls one of
//     those functions with something other than visible code at such a
//     parameter, takes it as a value, stores something other than visible
//     code in one of those fields or lets its address go, or calls an
//     interface method of a setter's name that takes a function (its
//     SetterCalls fact).

// FieldSetter is the fact lockedcall exports for a function through whose
// parameters, or an exported field (a config struct's) through whose values,
// other packages fill an unexported function field that the package calls
// (the only ways in, with its own defaults): gorilla/websocket's
// (*Conn).SetPongHandler, or a cache's Config.KeyToHash.
type FieldSetter struct {
	Params []int    // the parameters stored in the fields (0 is a method's receiver); none for a field
	Fields []string // the fields, as the package spells them
}

// AFact marks FieldSetter as an analysis fact.
func (*FieldSetter) AFact() {}

func (f *FieldSetter) String() string {
	return "sets " + strings.Join(f.Fields, ", ")
}

// SetterCalls is the package fact lockedcall exports for a package that
// calls a function with a FieldSetter fact with code that may be from
// outside, takes one as a value, stores such code in a field with a
// FieldSetter fact or lets its address go, or calls an interface method of
// a setter's name with a function, or that imports a package of its module
// that does: where it is imported, the fields those setters set may hold
// that code.
type SetterCalls struct {
	Funcs   []string // the functions, by types.Func.FullName, and config fields (see setterName)
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

// fieldDefault returns the ways into the field that callback o of fn calls
// (setterName of each), when that field is an unexported function field of
// this package that otherwise holds only its own code: parameters of
// functions (setters, constructors), and exported fields of its types
// (config fields) whose values are stored in it. ok is false when anything
// else may be stored there.
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
		switch obj := e.obj.(type) {
		case *types.Func:
			if e.param < 0 {
				return nil, false
			}
			c.addFieldSetter(obj, e.param, f)
		case *types.Var:
			if !obj.IsField() {
				return nil, false // an exported package variable: anyone may store there, unseen
			}
			c.addFieldSetter(obj, -1, f)
		default:
			return nil, false
		}
		setBy = append(setBy, setterName(e.obj))
	}
	slices.Sort(setBy)
	return slices.Compact(setBy), true
}

// addFieldSetter records that param of the function obj (-1 for the field
// obj) is stored in the defaulted field f.
func (c *checker) addFieldSetter(obj types.Object, param int, f *types.Var) {
	if c.fieldSetters == nil {
		c.fieldSetters = map[types.Object]*FieldSetter{}
	}
	fs := c.fieldSetters[obj]
	if fs == nil {
		fs = &FieldSetter{}
		c.fieldSetters[obj] = fs
	}
	if param >= 0 && !slices.Contains(fs.Params, param) {
		fs.Params = append(fs.Params, param)
	}
	if !slices.Contains(fs.Fields, f.Name()) {
		fs.Fields = append(fs.Fields, f.Name())
	}
}

// setterName names a way into a defaulted field in Callback.SetBy and
// SetterCalls.Funcs: a function's types.Func.FullName, a field's package
// path, type and name (example.com/kv.Config.KeyToHash).
func setterName(obj types.Object) string {
	if fn, ok := obj.(*types.Func); ok {
		return fn.FullName()
	}
	if ref, ok := hookRef(obj); ok {
		return ref.Pkg + "." + ref.Name
	}
	return obj.Pkg().Path() + "." + obj.Name()
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
	for _, f := range inIndexOrder(ix, ix.fieldStores) {
		if c.configFieldOf(f) && (ix.escaped[f] || !c.allVisible(ix.fieldStores[f])) {
			s.funcs[setterName(f)] = true
		}
	}
	for _, k := range inIndexOrder(ix, ix.escaped) {
		switch k := k.(type) {
		case *ssa.Function:
			if fs, obj := c.fieldSetterOf(k); fs != nil {
				s.funcs[obj.FullName()] = true
			}
		case *types.Var:
			if c.configFieldOf(k) {
				s.funcs[setterName(k)] = true
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

// configFieldOf reports whether f is a field of another module's package
// with a FieldSetter fact: a config field whose value that package stores
// in a field it otherwise fills with its own default.
func (c *checker) configFieldOf(f *types.Var) bool {
	if f.Pkg() == nil || f.Pkg() == c.pass.Pkg || !f.IsField() || c.sameModule(f.Pkg().Path()) {
		return false
	}
	var fs FieldSetter
	return c.pass.ImportObjectFact(f, &fs)
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
