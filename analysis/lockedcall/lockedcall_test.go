package lockedcall_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/gpuinit/gpuinit/analysis/lockedcall"
)

func TestPlainCalls(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "basic", "owned")
}

func TestPyTorchLazyInit(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "pytorch")
}

func TestHelperFacts(t *testing.T) {
	restore := lockedcall.SetSummaryFacts(false)
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "helpers")
	restore()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "lockutil", "lockuser")
}

func TestDirectives(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "suppress")
}

func TestInterfacesFlag(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "ifacesoff")
	setFlag(t, "interfaces", "true")
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "ifaces")
}

// setFlag sets one of the analyzer's flags for the rest of the test.
func setFlag(t *testing.T, name, value string) {
	t.Helper()
	old := lockedcall.Analyzer.Flags.Lookup(name).Value.String()
	if err := lockedcall.Analyzer.Flags.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lockedcall.Analyzer.Flags.Set(name, old) })
}

func TestCondIsItsMutex(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "cond")
}

func TestHelperChains(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "chain")
}

func TestLockedHelpers(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "lockedhelper", "witnessorder")
}

func TestChainsAcrossPackages(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "chainlib", "chainuser")
}

func TestModuleVisibility(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "modvis/internal/clock", "modvis/internal/transport", "modvis/knobs", "modvis/public", "modvis/client")
}

func TestGoroutineHandoff(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "handoff")
}

func TestObligations(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "oblig/api", "oblig/internal/pool", "oblig/internal/relay", "oblig/client")
}

func TestPromises(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "oblig/internal/watch", "oblig/internal/depmgr")
}

// TestReentryCache is issue 31's program: main's loader re-enters the
// internal cache's Get, which holds c.mu while it calls the loader.
func TestReentryCache(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "reentry/internal/cache", "reentry/cmd/app")
}

// TestReentryWithinPackage proves re-entry by a static call, a helper, a
// method value, a hook set in init and an RWMutex, and the shapes that are
// none: another field, another instance, an unlock first, a goroutine, an
// interface, a wait that gives the lock up.
func TestReentryWithinPackage(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "reentry/local")
}

// reentryForms are the forms in which a command gives its cache a loader,
// or its queue a hook, that calls back into it (issue 39): each directory
// under testdata/src/forms holds the program, which deadlocks, and quiet/,
// the same program with the re-entry removed (the loader locks a mutex of
// another type), which runs. cmd/lockedcall's TestReentryDeadlocks runs
// them.
var reentryForms = []string{
	"ctorlocal",   // an exported constructor's parameter; the cache in a local
	"ctormain",    // the same, the cache in a package variable set in main
	"ctorinit",    // the same, the cache in a package variable set in init
	"option",      // a functional option's parameter, stored by its closure
	"config",      // a config struct's field, nil for the package's default
	"setter",      // a setter method's parameter
	"methodvalue", // a method value as the constructor's argument
}

// TestReentryForms proves re-entry in each form, whatever the export status
// of the constructor, option or setter in a command, and none where the
// loader locks another type's mutex.
func TestReentryForms(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	for _, form := range reentryForms {
		t.Run(form, func(t *testing.T) {
			analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "forms/"+form, "forms/"+form+"/quiet")
		})
	}
}

// TestDependencyDefaults proves that a dependency's field, filled by its
// constructor with its own default and changed only through its setter, is
// not from outside where the module never calls the setter with code from
// outside (quiet), and is where a package of the module does (loud, through
// setter).
func TestDependencyDefaults(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "example.com/ws", "wsuser/quiet", "wsuser/setter", "wsuser/loud")
}

// TestConfigDefaults proves that a dependency's field, filled by its
// constructor from its config's field and with its own default where that
// is nil, is not from outside where the module never stores code from
// outside in that config field (quiet), and is where a package of the
// module does (loud, through filler).
func TestConfigDefaults(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "example.com/kv", "kvuser/quiet", "kvuser/filler", "kvuser/loud")
}

// TestInitOnlyVariables proves that an exported package variable of a
// public package, stored only by its initializer with the package's own
// code, is the package's own code: its calls under the package's lock
// become an obligation on the variable (env), the module's packages that
// call it under their locks are silent (app), each store in it is checked
// (override: a parameter and a re-entry reported, its own reader not), and
// a package that imports one that stores code from outside is not silent
// (useover). A variable that a setter or init stores is its API (env).
func TestInitOnlyVariables(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "pubvar/env", "pubvar/app", "pubvar/override", "pubvar/useover")
}

// TestUnimportableExports proves that a command's exported hooks, variables
// and functions, which no other package can import, are its own (tool), and
// that the same shape in an importable package is its API, from outside
// (hooks).
func TestEnvTables(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "envtable")
}

func TestUnimportableExports(t *testing.T) {
	defer lockedcall.SetSummaryFacts(false)()
	analysistest.Run(t, analysistest.TestData(), lockedcall.Analyzer, "exported/cmd/tool", "exported/hooks")
}
