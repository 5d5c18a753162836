package device

import (
	"strings"
	"testing"

	"github.com/gpuinit/gpuinit/internal/docnames"
)

// classList renders the class table as the package doc (doc.go) lists it:
// one item a row, the class first.
func classList() string {
	items := make([]string, len(classRules))
	for i, r := range classRules {
		items[i] = r.class.String() + ": " + r.what
	}
	return docnames.List(items, 100)
}

// TestThePackageDocListsTheClassTable keeps the package doc's list of
// failure classes the table in the code, row for row.
func TestThePackageDocListsTheClassTable(t *testing.T) {
	doc, err := docnames.PackageDoc("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, classList()) {
		pasted := "// " + strings.ReplaceAll(strings.TrimSuffix(classList(), "\n"), "\n", "\n// ")
		t.Errorf("doc.go does not list the class table as the code has it; paste this in:\n\n%s", pasted)
	}
}
