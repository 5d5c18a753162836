package lockedcall

import "go/types"

// The result of a method call on an interface of one of the module's internal
// packages (xdsresource.Producer's WatchResource, which returns a cancel
// function) is what the interface's implementations return. Only the module
// names the interface; the implementations this package can see are the
// types of the module's packages it imports, directly or not, and its own. If
// each of them returns visible code, so does the call. An implementation in a
// package that this one does not import is not seen.

// implKey names a memoized answer of implsReturnVisible.
type implKey struct {
	m *types.Func
	i int
}

// implsReturnVisible reports whether result i of the interface method m is
// visible code in every implementation the package can see, and there is one.
func (c *checker) implsReturnVisible(m *types.Func, i int) bool {
	pkg := m.Pkg()
	recv := m.Signature().Recv()
	if pkg == nil || recv == nil || !isInternal(pkg.Path()) || (pkg != c.pass.Pkg && !c.sameModule(pkg.Path())) {
		return false
	}
	iface, ok := recv.Type().Underlying().(*types.Interface)
	if !ok {
		return false
	}
	return c.verdict(implKey{m, i}, func() bool {
		found := false
		for _, p := range c.modulePackages() {
			scope := p.Scope()
			for _, name := range scope.Names() {
				tn, ok := scope.Lookup(name).(*types.TypeName)
				if !ok || tn.IsAlias() || types.IsInterface(tn.Type()) {
					continue
				}
				visible, implements := c.implResultVisible(tn, iface, m.Name(), i)
				if implements && !visible {
					return false
				}
				found = found || implements
			}
		}
		return found
	})
}

// implResultVisible reports whether the declared type tn implements iface,
// and if so whether result i of its method name is visible code. A generic
// type with such a method cannot be checked: it counts as not visible.
func (c *checker) implResultVisible(tn *types.TypeName, iface *types.Interface, name string, i int) (visible, implements bool) {
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return false, false
	}
	if named.TypeParams().Len() > 0 {
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(named), true, tn.Pkg(), name)
		return false, obj != nil
	}
	var t types.Type = named
	if !types.Implements(t, iface) {
		if t = types.NewPointer(named); !types.Implements(t, iface) {
			return false, false
		}
	}
	obj, _, _ := types.LookupFieldOrMethod(t, true, tn.Pkg(), name)
	fn, ok := obj.(*types.Func)
	if !ok {
		return false, true
	}
	ssaFn := c.form.pkg.Prog.FuncValue(fn)
	return ssaFn != nil && c.resultVisible(ssaFn, i), true
}

// modulePackages returns the package and the packages of its module that it
// imports, directly or not.
func (c *checker) modulePackages() []*types.Package {
	if c.modPkgs != nil {
		return c.modPkgs
	}
	seen := map[*types.Package]bool{c.pass.Pkg: true}
	out := []*types.Package{c.pass.Pkg}
	for i := 0; i < len(out); i++ {
		for _, imp := range out[i].Imports() {
			if !seen[imp] && c.sameModule(imp.Path()) {
				seen[imp] = true
				out = append(out, imp)
			}
		}
	}
	c.modPkgs = out
	return out
}
