package lockedcall

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// Analyzer reports calls of function values from outside made while a
// sync.Mutex or sync.RWMutex is held. See the package documentation.
var Analyzer = &analysis.Analyzer{
	Name:      "lockedcall",
	Doc:       doc,
	URL:       "https://pkg.go.dev/github.com/gpuinit/gpuinit/analysis/lockedcall",
	Run:       run,
	FactTypes: []analysis.Fact{(*NoReturn)(nil), (*LockEffects)(nil), (*CallSummary)(nil), (*VisibleHook)(nil), (*OutsideHooks)(nil), (*Obligations)(nil), (*Promises)(nil), (*Acquires)(nil), (*FieldSetter)(nil), (*SetterCalls)(nil)},
}

const doc = `report calls of outside function values made while a mutex is held

lockedcall reports a call of a function value that the calling function cannot
see (a parameter, a field, a map or slice element, a package variable, the result
of a call) made while a sync.Mutex or sync.RWMutex is held on some path to the
call: if that function re-enters code that takes the lock, the program
deadlocks. Also calls of helpers that call such values as they run (reported
with the chain of calls), what locked helpers (...Locked, or only called with a
lock held) call, deferred calls that run at a return with a lock held,
range-over-func loops over such iterators, local closures that call such values,
and goroutines waited for under the lock. In an internal package, what comes
in through its exported API is checked where the module passes or stores it.
Where the code run under the lock is the module's own, a path of it that locks
the held mutex again is reported as proven re-entry ("deadlocks if it runs";
-reentry=false turns it off).
Suppress a reviewed call with "//lockedcall:ok <reason>" on its line or alone on the line
above.`

// interfaces is the -interfaces flag: also report interface method calls on
// parameters, fields and package variables made under a lock.
var interfaces bool

// reentry is the -reentry flag: report the module's own code that runs under
// a mutex and locks it again (on by default).
var reentry = true

// factsOnly is the -factsonly flag: the package is analyzed only for the
// facts of the packages that import it, as go vet analyzes a dependency
// that it does not report on. The work that serves findings alone is left
// out; the facts are the same (TestFactsOnlyExportsTheSameFacts).
var factsOnly bool

func init() {
	Analyzer.Flags.BoolVar(&interfaces, "interfaces", false,
		"also report interface method calls (ctx.Err(), w.Write) on parameters, fields and package variables made while a mutex is held")
	Analyzer.Flags.BoolVar(&reentry, "reentry", true,
		"report calls, under a mutex, of the module's own code that locks that mutex again (proven re-entry)")
	Analyzer.Flags.BoolVar(&factsOnly, "factsonly", false,
		"compute only the facts that importing packages need and report nothing, for a package analyzed only as a dependency (the lockedcall command sets it where go vet does that)")
}

// checker is the state of one pass: one package.
type checker struct {
	pass       *analysis.Pass
	form       form
	funcs      []*ssa.Function // the package's, in source order (see packageFuncs)
	srcFuncs   map[*ssa.Function]bool
	interfaces bool
	reentry    bool

	valueIDs     map[ssa.Value]int                  // numbers for mutexes known only as a value
	results      map[*ssa.Function]result           // top-level functions analyzed
	effects      map[*ssa.Function][]LockEffect     // what each function does to locks
	inProgress   map[*ssa.Function]bool             // recursion guard for effectsOf
	relevance    map[*ssa.Function]bool             // functions that touch a lock
	closureSites map[*ssa.Function]*ssa.MakeClosure // built on first use
	calls        map[token.Pos]*ast.CallExpr        // by Lparen; built on first use
	stores       *storeIndex                        // built on first use

	summaries        map[*ssa.Function][]outCall     // top-level functions' outside calls
	cycles           cycleState                      // summaries being built (cycle.go)
	provisional      map[*ssa.Function]bool          // analyzed with unfinished summaries
	closureSummaries map[*ssa.Function][]outCall     // closures', in their parent's context
	imported         map[*types.Func]*CallSummary    // other packages' facts, nil if none
	releasedAt       map[ssa.Instruction]releaseSeen // see afterRelease
	condFields       map[*types.Var]condFieldSteps   // see condSteps
	heldSites        map[ssa.Instruction]siteLock    // static calls of the package's functions made holding a lock
	exporting        bool                            // exportHooks is asking: an unset hook may still be exported
	outsideHooks     map[HookRef]bool                // hooks that imported packages set from outside; built on first use
	fieldSetters     map[types.Object]*FieldSetter   // the package's ways into defaulted fields (defaults.go)
	setterSet        setters                         // setters called here and below; built on first use

	// For internal packages (sources.go, obligation.go, obligcheck.go).
	sourceMemo    map[sourceKey]sourced
	sourceBusy    map[sourceKey]bool
	sourceAssumed int
	enterMemo     map[enterKey]bool
	obligations   obligationSet                 // what the package leaves to its callers, by entry
	importedObl   map[types.Object][]Obligation // other packages' Obligations facts
	storeExprs    map[token.Pos][2]ast.Expr     // assignments and literal elements, by their store's position
	modPkgs       []*types.Package              // see modulePackages
	dirSet        *directiveSet                 // see directives

	initOnly  *[]*ssa.Global                  // see initOnlyVars; nil until asked
	acquired  map[*ssa.Function][]Acquisition // what each function may lock (reentry.go)
	modCode   map[string]bool                 // see moduleCode
	reentries []finding                       // proven re-entries found by the flows
}

func run(pass *analysis.Pass) (any, error) {
	form := buildForm(pass)
	c := &checker{
		pass:       pass,
		form:       form,
		srcFuncs:   make(map[*ssa.Function]bool, len(form.funcs)),
		interfaces: interfaces,
		reentry:    reentry,
		acquired:   map[*ssa.Function][]Acquisition{},
		modCode:    map[string]bool{},
		valueIDs:   map[ssa.Value]int{},
		results:    map[*ssa.Function]result{},
		effects:    map[*ssa.Function][]LockEffect{},
		inProgress: map[*ssa.Function]bool{},
		relevance:  map[*ssa.Function]bool{},

		summaries:        map[*ssa.Function][]outCall{},
		closureSummaries: map[*ssa.Function][]outCall{},
		imported:         map[*types.Func]*CallSummary{},
		cycles:           cycleState{low: noLow},
		provisional:      map[*ssa.Function]bool{},
		releasedAt:       map[ssa.Instruction]releaseSeen{},
		condFields:       map[*types.Var]condFieldSteps{},
		heldSites:        map[ssa.Instruction]siteLock{},

		sourceMemo:  map[sourceKey]sourced{},
		sourceBusy:  map[sourceKey]bool{},
		enterMemo:   map[enterKey]bool{},
		importedObl: map[types.Object][]Obligation{},
	}
	funcs := packageFuncs(form)
	c.funcs = funcs
	for _, fn := range funcs {
		c.srcFuncs[fn] = true
	}
	var findings []finding
	for _, fn := range funcs {
		switch {
		case fn.Parent() == nil:
			r := c.analyzeTopLevel(fn)
			if c.provisional[fn] {
				// Analyzed while a cycle's summaries were being built: its
				// findings may lack what the cycle calls.
				r = c.analyze(&funcCtx{fn: fn}, newLockState())
				c.results[fn] = r
			}
			findings = append(findings, r.findings...)
		case fn.Synthetic == rangeYieldSynthetic:
			// Analyzed with its loop, from the state the loop starts in.
		case c.relevant(fn):
			findings = append(findings, c.analyze(c.standaloneCtx(fn), newLockState()).findings...)
		}
	}
	for _, fn := range funcs {
		c.exportSummary(fn)
	}
	c.exportFieldSetters()
	if summaryFacts {
		// Before the findings-only work below: what a function of a cycle
		// of calls acquires depends on which of the cycle's functions is
		// asked first (see acquiresOf), so the facts are asked for at the
		// same point with and without -factsonly.
		c.exportAcquires(funcs)
	}
	// Locked helpers, and the obligations of the packages called, serve
	// findings alone, unless the package is internal or defers the calls of
	// its exported variables: its own obligations are the findings it
	// defers to its callers. Asked here in both modes, for the same facts.
	defersVars := c.defersVars()
	if !factsOnly || c.deferring() || defersVars {
		helpers := c.lockedHelpers()
		findings = dropCoveredChains(findings, c.helperFindings(helpers), helpers)
		findings = c.deferToCallers(findings)
		findings = append(findings, c.checkObligations(funcs, findings)...)
		if c.deferring() || defersVars {
			c.exportObligations()
		}
		if c.deferring() {
			c.exportPromises()
		}
		findings = append(findings, c.reentries...)
		if !factsOnly {
			c.reportAll(findings)
		}
	}
	if summaryFacts {
		c.exportHooks(form.pkg) // last: it may accept hooks that the package's own checks do not
		c.exportOutsideHooks()
		c.exportSetterCalls()
	}
	return nil, nil
}

const rangeYieldSynthetic = "range-over-func yield"

// packageFuncs returns the functions written in the package: the form's, and
// the package initializer with the func literals of package variables.
func packageFuncs(form form) []*ssa.Function {
	funcs := append([]*ssa.Function(nil), form.funcs...)
	var addWithClosures func(fn *ssa.Function)
	addWithClosures = func(fn *ssa.Function) {
		funcs = append(funcs, fn)
		for _, anon := range fn.AnonFuncs {
			addWithClosures(anon)
		}
	}
	if init := form.pkg.Func("init"); init != nil {
		addWithClosures(init)
	}
	return funcs
}

// analyzeTopLevel analyzes a declared function (or method) once, from an
// empty state, and exports what it does to locks as a LockEffects fact.
func (c *checker) analyzeTopLevel(fn *ssa.Function) result {
	if r, ok := c.results[fn]; ok || c.inProgress[fn] {
		return r
	}
	c.inProgress[fn] = true
	var r result
	if c.relevant(fn) {
		// An analysis started while summaries are being built (from
		// summaryOf) may see some of them unfinished.
		low := c.cycles.low
		c.cycles.low = noLow
		r = c.analyze(&funcCtx{fn: fn}, newLockState())
		c.provisional[fn] = c.cycles.low != noLow
		c.cycles.low = min(low, c.cycles.low)
	}
	delete(c.inProgress, fn)
	c.results[fn] = r
	effects := effectsFromExit(fn, r.exit)
	c.effects[fn] = effects
	if obj, ok := fn.Object().(*types.Func); ok && len(effects) > 0 && obj.Pkg() == c.pass.Pkg {
		c.pass.ExportObjectFact(obj, &LockEffects{Effects: effects})
	}
	return r
}

// effectsOf returns what a statically called function does to locks: from
// its analysis in this package, or from its fact in another.
func (c *checker) effectsOf(fn *ssa.Function) []LockEffect {
	if origin := fn.Origin(); origin != nil {
		fn = origin
	}
	if c.srcFuncs[fn] {
		c.analyzeTopLevel(fn)
		return c.effects[fn]
	}
	if e, ok := c.effects[fn]; ok {
		return e
	}
	if fn.String() == "(*sync.Cond).Wait" {
		// Wait unlocks c.L and locks it again: the caller holds it before
		// and after, as it was.
		c.effects[fn] = nil
		return nil
	}
	var effects []LockEffect
	// Wrappers, thunks and bound methods take other arguments than the
	// declared function: its fact would not apply to them.
	declared := fn.Synthetic == "" || fn.Synthetic == "from type information"
	if obj, ok := fn.Object().(*types.Func); ok && declared && obj.Pkg() != c.pass.Pkg {
		var fact LockEffects
		if c.pass.ImportObjectFact(obj, &fact) {
			effects = fact.Effects
		}
	}
	c.effects[fn] = effects
	return effects
}

// relevant reports whether fn or a closure in it locks or unlocks a mutex,
// directly or through a function with LockEffects. Only those are analyzed: in
// the others no lock is ever held.
func (c *checker) relevant(fn *ssa.Function) bool {
	if r, ok := c.relevance[fn]; ok {
		return r
	}
	c.relevance[fn] = false // a recursion guard until the answer is known
	r := c.touchesLocks(fn)
	for _, anon := range fn.AnonFuncs {
		r = c.relevant(anon) || r
	}
	c.relevance[fn] = r
	return r
}

func (c *checker) touchesLocks(fn *ssa.Function) bool {
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			call, ok := instr.(ssa.CallInstruction)
			if !ok {
				continue
			}
			if _, isGo := instr.(*ssa.Go); isGo {
				continue
			}
			common := call.Common()
			if op, _ := lockOpOf(common); op != notLockOp {
				return true
			}
			if callee := staticTopLevel(common); callee != nil && callee != fn {
				if len(c.effectsOf(callee)) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// standaloneCtx is the context of a closure analyzed on its own, from an empty
// state: its free variables resolve in the function that made it, whose
// callers are unknown.
func (c *checker) standaloneCtx(fn *ssa.Function) *funcCtx {
	if fn.Parent() == nil {
		return &funcCtx{fn: fn}
	}
	if c.closureSites == nil {
		c.closureSites = map[*ssa.Function]*ssa.MakeClosure{}
		for _, src := range c.funcs {
			for _, b := range src.Blocks {
				for _, instr := range b.Instrs {
					if mc, ok := instr.(*ssa.MakeClosure); ok {
						c.closureSites[mc.Fn.(*ssa.Function)] = mc
					}
				}
			}
		}
	}
	ctx := &funcCtx{fn: fn}
	if mc := c.closureSites[fn]; mc != nil {
		ctx.parent, ctx.bindings = c.standaloneCtx(fn.Parent()), mc.Bindings
	}
	return ctx
}

// lockName is the mutex as the source spells it at a Lock call, e.g. "o.mu",
// or "s" for a mutex embedded in s.
func (c *checker) lockName(common *ssa.CallCommon, p lockPath) string {
	if p.viaCond {
		return p.name
	}
	if call := c.callAt(common.Pos()); call != nil {
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			return types.ExprString(sel.X)
		}
	}
	return p.name
}

// callAt returns the call expression whose '(' is at lparen.
func (c *checker) callAt(lparen token.Pos) *ast.CallExpr {
	if c.calls == nil {
		c.calls = map[token.Pos]*ast.CallExpr{}
		for _, file := range c.pass.Files {
			ast.Inspect(file, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					c.calls[call.Lparen] = call
				}
				return true
			})
		}
	}
	return c.calls[lparen]
}
