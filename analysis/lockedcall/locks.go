package lockedcall

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// lockPath names a mutex by the access path that reaches it from a root: a
// parameter, a package variable, or a local value. Two operations on equal keys
// work on the same mutex; derefs are left out of keys, since the types along a
// path fix where they occur.
type lockPath struct {
	key  string
	name string // the path as source, e.g. "o.mu"

	// A portable path can go into a fact: it starts at parameter param of a
	// top-level function (param >= 0) or at the package variable global, and
	// every step is a field name or a constant index.
	portable  bool
	param     int
	global    string // "import/path.name"
	globalPkg string // the name of global's package
	steps     []string

	viaCond bool // reached through a sync.Cond's L: name it as the mutex

	// id names the mutex by what it is, not by how the function reaches
	// it: "import/path.Type.field" for a field, "g:import/path.name" for a
	// package variable; "" when it is neither (an element, a local). Two
	// paths with one id may still be two instances of one type.
	id string
}

// extend returns the path one step further: a field name or an index.
func (p lockPath) extend(step string, portable bool) lockPath {
	sep := "."
	if strings.HasPrefix(step, "[") {
		sep = ""
	}
	q := p
	q.key = p.key + sep + step
	q.name = p.name + sep + step
	q.portable = p.portable && portable
	q.steps = append(append([]string(nil), p.steps...), step)
	q.id = ""
	return q
}

// lockOp is what a call does to a mutex.
type lockOp int

const (
	notLockOp lockOp = iota
	opLock
	opRLock
	opUnlock
	opRUnlock
	opTryLock
	opTryRLock
)

// lockOpOf recognizes Lock, RLock, Unlock, RUnlock, TryLock and TryRLock of
// sync.Mutex and sync.RWMutex, and Lock and Unlock through an interface with
// sync.Locker's methods (c.L.Lock() on a sync.Cond). It returns the value
// that denotes the mutex.
func lockOpOf(call *ssa.CallCommon) (lockOp, ssa.Value) {
	if call.IsInvoke() {
		op := opByName(call.Method.Name())
		if (op == opLock || op == opUnlock) && isLockerInterface(call.Value.Type()) {
			return op, call.Value
		}
		return notLockOp, nil
	}
	fn := call.StaticCallee()
	if fn == nil || len(call.Args) == 0 {
		return notLockOp, nil
	}
	obj, ok := fn.Object().(*types.Func)
	if !ok || obj.Pkg() == nil || obj.Pkg().Path() != "sync" {
		return notLockOp, nil
	}
	recv := obj.Signature().Recv()
	if recv == nil {
		return notLockOp, nil
	}
	ptr, ok := recv.Type().(*types.Pointer)
	if !ok {
		return notLockOp, nil
	}
	named, ok := ptr.Elem().(*types.Named)
	if !ok || (named.Obj().Name() != "Mutex" && named.Obj().Name() != "RWMutex") {
		return notLockOp, nil
	}
	return opByName(obj.Name()), call.Args[0]
}

func opByName(name string) lockOp {
	switch name {
	case "Lock":
		return opLock
	case "RLock":
		return opRLock
	case "Unlock":
		return opUnlock
	case "RUnlock":
		return opRUnlock
	case "TryLock":
		return opTryLock
	case "TryRLock":
		return opTryRLock
	}
	return notLockOp
}

// isLockerInterface reports whether t is an interface whose methods are
// exactly Lock() and Unlock(), as sync.Locker's.
func isLockerInterface(t types.Type) bool {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok || iface.NumMethods() != 2 {
		return false
	}
	for i := range iface.NumMethods() {
		m := iface.Method(i)
		sig := m.Signature()
		if (m.Name() != "Lock" && m.Name() != "Unlock") || sig.Params().Len() != 0 || sig.Results().Len() != 0 {
			return false
		}
	}
	return true
}

// pathOf returns the access path of the mutex that v points to (or, for a
// sync.Locker, holds), as seen from ctx.
func (c *checker) pathOf(v ssa.Value, ctx *funcCtx) lockPath {
	return c.pathOfDepth(v, ctx, 0)
}

func (c *checker) pathOfDepth(v ssa.Value, ctx *funcCtx, depth int) lockPath {
	if depth > maxPathDepth {
		return c.opaqueRoot(v)
	}
	switch v := v.(type) {
	case *ssa.FieldAddr:
		if isCondL(v.X.Type(), v.Field) {
			if p, ok := c.condLock(v.X, ctx, depth+1); ok {
				return p
			}
		}
		p := c.pathOfDepth(v.X, ctx, depth+1).extend(fieldName(v.X.Type(), v.Field), true)
		p.id = fieldID(v.X.Type(), fieldName(v.X.Type(), v.Field))
		return p
	case *ssa.Field:
		p := c.pathOfDepth(v.X, ctx, depth+1).extend(fieldName(v.X.Type(), v.Field), true)
		p.id = fieldID(v.X.Type(), fieldName(v.X.Type(), v.Field))
		return p
	case *ssa.IndexAddr:
		step, portable := c.indexStep(v.Index)
		return c.pathOfDepth(v.X, ctx, depth+1).extend(step, portable)
	case *ssa.Index:
		step, portable := c.indexStep(v.Index)
		return c.pathOfDepth(v.X, ctx, depth+1).extend(step, portable)
	case *ssa.UnOp:
		if v.Op != token.MUL {
			break
		}
		// A variable that is stored once (a captured parameter spilled to the
		// heap, say) stands for the value stored in it.
		if stored, storedCtx := c.singleStore(v.X, ctx); stored != nil {
			return c.pathOfDepth(stored, storedCtx, depth+1)
		}
		return c.pathOfDepth(v.X, ctx, depth+1)
	case *ssa.MakeInterface:
		return c.pathOfDepth(v.X, ctx, depth+1)
	case *ssa.ChangeType:
		return c.pathOfDepth(v.X, ctx, depth+1)
	case *ssa.Parameter:
		i := paramIndex(ctx.fn, v)
		switch {
		case i < 0:
		case ctx.caller != nil:
			return c.pathOfDepth(ctx.args[i], ctx.caller, depth+1)
		case ctx.parent == nil:
			return lockPath{key: fmt.Sprintf("p%d", i), name: v.Name(), portable: true, param: i}
		}
	case *ssa.FreeVar:
		if i := freeVarIndex(ctx.fn, v); i >= 0 && ctx.parent != nil {
			return c.pathOfDepth(ctx.bindings[i], ctx.parent, depth+1)
		}
	case *ssa.Global:
		if v.Pkg == nil {
			return c.globalPath(v.Name(), "")
		}
		return c.globalPath(v.Pkg.Pkg.Path()+"."+v.Name(), v.Pkg.Pkg.Name())
	}
	return c.opaqueRoot(v)
}

// globalPath is the path of the package variable global ("import/path.name")
// of the package named pkgName; its name is qualified outside that package.
func (c *checker) globalPath(global, pkgName string) lockPath {
	name := global
	if dot := strings.LastIndexByte(global, '.'); dot >= 0 {
		name = global[dot+1:]
		if global[:dot] != c.pass.Pkg.Path() {
			name = pkgName + "." + name
		}
	}
	return lockPath{key: "g:" + global, name: name, portable: true, param: -1, global: global, globalPkg: pkgName, id: "g:" + global}
}

// fieldID is the id of the mutex in field name of the named struct type t is
// or points to; "" for a struct type without a name.
func fieldID(t types.Type, name string) string {
	n := namedOf(t)
	if n == nil || n.Obj().Pkg() == nil {
		return ""
	}
	return n.Obj().Pkg().Path() + "." + n.Obj().Name() + "." + name
}

// maxPathDepth bounds the walks over values, which can cycle through phis and
// captured variables.
const maxPathDepth = 16

// opaqueRoot names a value that the analysis cannot see through by its
// identity: the same SSA value is the same mutex.
func (c *checker) opaqueRoot(v ssa.Value) lockPath {
	id, ok := c.valueIDs[v]
	if !ok {
		id = len(c.valueIDs)
		c.valueIDs[v] = id
	}
	name := v.Name()
	if a, ok := v.(*ssa.Alloc); ok && token.IsIdentifier(a.Comment) {
		name = a.Comment
	}
	return lockPath{key: fmt.Sprintf("v%d", id), name: name, param: -1}
}

// indexStep renders an index for a path: the constant, or the index value's
// identity when it is not constant (same value, same element).
func (c *checker) indexStep(index ssa.Value) (string, bool) {
	if k, ok := index.(*ssa.Const); ok && k.Value != nil && k.Value.Kind() == constant.Int {
		return "[" + k.Value.ExactString() + "]", true
	}
	return "[" + c.opaqueRoot(index).key + "]", false
}

// singleStore resolves a load from a local variable that is assigned exactly
// once in its function to the value assigned, and returns the context in which
// that value lives. Captured variables resolve through their closure bindings.
func (c *checker) singleStore(addr ssa.Value, ctx *funcCtx) (ssa.Value, *funcCtx) {
	addr, ctx = resolveFreeVar(addr, ctx)
	alloc, ok := addr.(*ssa.Alloc)
	if !ok {
		return nil, nil
	}
	stores := allocStores(alloc)
	if len(stores) != 1 {
		return nil, nil
	}
	return stores[0], ctx
}

// resolveFreeVar follows a captured variable to the value bound to it in the
// enclosing function's context, as far as the contexts are known.
func resolveFreeVar(v ssa.Value, ctx *funcCtx) (ssa.Value, *funcCtx) {
	for ctx != nil {
		fv, ok := v.(*ssa.FreeVar)
		if !ok || ctx.parent == nil {
			break
		}
		i := freeVarIndex(ctx.fn, fv)
		if i < 0 {
			break
		}
		v, ctx = ctx.bindings[i], ctx.parent
	}
	return v, ctx
}

// allocStores returns the values stored into a local variable.
func allocStores(alloc *ssa.Alloc) []ssa.Value {
	var stored []ssa.Value
	for _, ref := range *alloc.Referrers() {
		if st, ok := ref.(*ssa.Store); ok && st.Addr == alloc {
			stored = append(stored, st.Val)
		}
	}
	return stored
}

func paramIndex(fn *ssa.Function, p *ssa.Parameter) int {
	for i, q := range fn.Params {
		if q == p {
			return i
		}
	}
	return -1
}

func freeVarIndex(fn *ssa.Function, fv *ssa.FreeVar) int {
	for i, q := range fn.FreeVars {
		if q == fv {
			return i
		}
	}
	return -1
}

// fieldName returns the name of field i of the struct that t is or points to.
func fieldName(t types.Type, i int) string {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		t = tp.Constraint()
	}
	if s, ok := t.Underlying().(*types.Struct); ok && i < s.NumFields() {
		return s.Field(i).Name()
	}
	return fmt.Sprintf("field%d", i)
}
