package docnames

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backticked matches a code span of Markdown: `text`.
var backticked = regexp.MustCompile("`([^`\n]+)`")

// goName matches a code span that is a Go name: an exported name, or a
// chain of them, with or without a package or variable before it and
// with the arguments of a call (Open("cuda"), rt.Stats().Lost, *lazy.InitError).
var goName = regexp.MustCompile(`^\*?(?:([a-z][a-z0-9]*)\.)?([A-Z][A-Za-z0-9_]*(?:\([^()]*\))?(?:\.[A-Z][A-Za-z0-9_]*(?:\([^()]*\))?)*)$`)

// settingName matches a code span that names a GPUINIT_ variable, or a
// family of them (GPUINIT_SIM_*).
var settingName = regexp.MustCompile(`^GPUINIT_[A-Z0-9_]*\*?$`)

// pathName matches a code span that is a path of the repository: folders
// and files of lower-case names, with a / in it (device/driver,
// examples/server, device/env.go, internal/..., .ci/run). A first part with
// a dot in it is a host (k8s.io/..., github.com/...), not a path.
var pathName = regexp.MustCompile(`^\.?[a-z][a-z0-9_-]*(?:/[A-Za-z0-9_.*-]+)*/?(?:\.\.\.)?$`)

// notOurs are code spans shaped like our names that name something else:
// Kubernetes' feature gates, taint effects and health values, and a
// platform. The check leaves them alone.
var notOurs = []string{
	"DRADeviceTaints", "DRAResourceHealth", "ResourceHealthStatus", // Kubernetes feature gates
	"NoExecute", "NoSchedule", // Kubernetes taint effects
	"None",        // Kubernetes' health value for no device
	"linux/arm64", // a platform
}

// spans are the code spans of the Markdown text, outside fenced and
// indented code, each with whether it is in the first column of a table
// whose header begins "| package |".
func spans(text string) (names []string, packages []string) {
	fenced, inPackages := false, false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		if strings.HasPrefix(line, "| package |") {
			inPackages = true
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inPackages = false
		}
		rest := line
		if inPackages {
			cells := strings.SplitN(line, " | ", 2)
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				packages = append(packages, m[1])
			}
			rest = cells[len(cells)-1]
		}
		for _, m := range backticked.FindAllStringSubmatch(rest, -1) {
			names = append(names, m[1])
		}
	}
	return names, packages
}

// settingsInCode are the GPUINIT_ names the repository's code, scripts and
// configuration hold: every file but the Markdown docs, the tests and
// testdata.
func settingsInCode(t *testing.T) map[string]bool {
	t.Helper()
	word := regexp.MustCompile(`GPUINIT_[A-Z0-9_]*[A-Z0-9]`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || d.Name() == ".git") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, w := range word.FindAllString(string(data), -1) {
			out[w] = true
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// names are what the backtick check compares the docs with.
type names struct {
	pkgs     map[string]pkg
	settings map[string]bool
}

// resolveBare says whether a Go name without a qualifier (Open, Stats.Changed,
// Registration.Env) is a name of one of the packages the docs name: a
// top-level name, or a single member of one of their types.
func (n names) resolveBare(chain string) bool {
	first, _, _ := strings.Cut(strings.TrimSuffix(arguments.ReplaceAllString(chain, "()"), "()"), ".")
	first, _, _ = strings.Cut(first, "(")
	followed, opaque := false, false // a package has it as a type the check can follow, or cannot
	for q, where := range qualifiers {
		if where.typ != "" {
			continue
		}
		p := n.pkgs[q]
		if of, ok := p.top[first]; ok {
			switch {
			case !strings.Contains(chain, "."):
				return true
			case of == "" || p.opaque[of]: // of a type outside the package, or an alias
				opaque = true
			default:
				followed = true
				if check(n.pkgs, q, "."+chain) == "" {
					return true
				}
			}
		}
		if strings.Contains(chain, ".") {
			continue
		}
		for _, members := range p.members {
			if _, ok := members[first]; ok {
				return true
			}
		}
	}
	return opaque && !followed // only where no package has it as a type the check follows
}

// missing says what is wrong with the code span s of the doc at path, or
// "" where it names something that exists, or is not a name the check
// knows how to follow (a command, a value, a C function).
func (n names) missing(path, s string) string {
	if slices.Contains(notOurs, s) {
		return ""
	}
	if settingName.MatchString(s) {
		if prefix, family := strings.CutSuffix(s, "*"); family {
			for name := range n.settings {
				if strings.HasPrefix(name, prefix) {
					return ""
				}
			}
			return s + ": no GPUINIT_ name of the code begins so"
		}
		if !n.settings[s] {
			return s + ": no file of the code names this variable"
		}
		return ""
	}
	if m := goName.FindStringSubmatch(s); m != nil {
		q, chain := m[1], m[2]
		switch {
		case slices.Contains(gone, strings.TrimPrefix(s, "*")):
			return ""
		case q == "":
			if !n.resolveBare(chain) {
				return s + ": no package the docs name has it"
			}
		case qualifiers[q].dir != "":
			if bad := check(n.pkgs, q, "."+chain); bad != "" {
				return s + ": the code has no " + bad
			}
		}
		return "" // a package outside the module's (errors.As): not followed
	}
	if strings.Contains(s, "/") && pathName.MatchString(s) {
		return missingPath(path, s)
	}
	return ""
}

// missingPath says what is wrong with p, a path the doc at path names: ""
// where it is a file or folder from the repository's root or the doc's
// folder, or a standard library package.
func missingPath(path, p string) string {
	clean := strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
	clean = strings.TrimSuffix(clean, "/*")
	for _, from := range []string{root, filepath.Join(root, filepath.Dir(path))} {
		if _, err := os.Stat(filepath.Join(from, clean)); err == nil {
			return ""
		}
	}
	if pkg, err := build.Default.Import(clean, "", build.FindOnly); err == nil && pkg.Goroot {
		return ""
	}
	return p + ": no such file, folder or standard package"
}

// missingPackage says what is wrong with a first-column cell of the
// package table: "" where it is a folder of the repository.
func missingPackage(s string) string {
	clean := strings.TrimSuffix(strings.TrimSuffix(s, "..."), "/")
	info, err := os.Stat(filepath.Join(root, clean))
	if err != nil || !info.IsDir() {
		return s + ": the package table names a folder that is not there"
	}
	return ""
}

// TestTheBacktickedNamesExist: every code span of the Markdown docs that
// names a Go name (device.Open, rt.Stats().Lost, Registration.Env), a
// GPUINIT_ variable or a path of the repository (device/driver,
// .ci/run) names one that exists, and every package of the README's
// package table is a folder. A rename that the docs do not follow fails.
func TestTheBacktickedNamesExist(t *testing.T) {
	n := names{pkgs: packages(t), settings: settingsInCode(t)}
	for _, path := range markdownDocs(t) {
		text, _ := docText(t, path)
		spanned, packages := spans(text)
		var bad []string
		for _, s := range spanned {
			if why := n.missing(path, s); why != "" && !slices.Contains(bad, why) {
				bad = append(bad, why)
			}
		}
		for _, s := range packages {
			if why := missingPackage(s); why != "" {
				bad = append(bad, why)
			}
		}
		assert.Empty(t, bad, "%s's code spans name these, which are not there", path)
	}
}

// TestTheBacktickCheckFindsAMissingName: the check is shown to catch a Go
// name, a variable, a path and a package that are not there, and to pass
// those that are.
func TestTheBacktickCheckFindsAMissingName(t *testing.T) {
	n := names{pkgs: packages(t), settings: settingsInCode(t)}
	for _, tc := range []struct{ span, missing string }{
		{"device.Open", ""},
		{"device.Opne", "device.Opne: the code has no device.Opne"},
		{"rt.Stats().Lost", ""},
		{"rt.Stats().Lots", "rt.Stats().Lots: the code has no rt.Stats().Lots"},
		{"Registration.Env", ""},
		{"Registration.Envs", "Registration.Envs: no package the docs name has it"},
		{"Shutdown", ""},
		{"Shutdwon", "Shutdwon: no package the docs name has it"},
		{"Open(\"cuda\")", ""},
		{"*lazy.InitError", ""},
		{"errors.As", ""},
		{"GPUINIT_BACKEND", ""},
		{"GPUINIT_BACKNED", "GPUINIT_BACKNED: no file of the code names this variable"},
		{"GPUINIT_SIM_*", ""},
		{"GPUINIT_SMI_*", "GPUINIT_SMI_*: no GPUINIT_ name of the code begins so"},
		{"device/driver", ""},
		{"device/env.go", ""},
		{"internal/...", ""},
		{".ci/run", ""},
		{"database/sql/driver", ""},
		{"device/drivers", "device/drivers: no such file, folder or standard package"},
		{"k8s.io/dynamic-resource-allocation/kubeletplugin", ""},
		{"no-gpu", ""},
		{"go test ./...", ""},
	} {
		assert.Equal(t, tc.missing, n.missing("README.md", tc.span), tc.span)
	}
	assert.Empty(t, missingPackage("rng/philox"))
	assert.Empty(t, missingPackage("internal/..."))
	assert.Equal(t, "rng/phliox: the package table names a folder that is not there", missingPackage("rng/phliox"))

	names, packages := spans("| package | what it is |\n| --- | --- |\n| `lazy` | first `Use` |\n\n" +
		"```go\nx := `raw`\n```\n    `indented`\nAnd `Open`.\n")
	assert.Equal(t, []string{"Use", "Open"}, names)
	assert.Equal(t, []string{"lazy"}, packages)
}
