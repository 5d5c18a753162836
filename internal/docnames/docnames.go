package docnames

import (
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"unicode/utf8"
)

// PackageDoc returns the package comment of the Go file at path, as go doc
// reads it: the text without the comment markers (ast.CommentGroup.Text).
func PackageDoc(path string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", fmt.Errorf("%s has no package comment", path)
	}
	return f.Doc.Text(), nil
}

// CodeAfter returns the first code block of doc (PackageDoc's text) after
// intro: its lines without the tab that indents them, each ending in a
// newline. A blank line inside the block is kept; the block ends at the
// first line that is neither indented nor blank.
func CodeAfter(doc, intro string) (string, error) {
	_, after, ok := strings.Cut(doc, intro)
	if !ok {
		return "", fmt.Errorf("the doc does not say %q", intro)
	}
	var b strings.Builder
	blanks := 0 // blank lines seen inside the block, kept once it goes on
	for line := range strings.Lines(after) {
		code, indented := strings.CutPrefix(line, "\t")
		switch {
		case indented:
			b.WriteString(strings.Repeat("\n", blanks) + code)
			blanks = 0
		case b.Len() == 0:
		case strings.TrimSpace(line) == "":
			blanks++
		default:
			return b.String(), nil
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("no code block follows %q", intro)
	}
	return b.String(), nil
}

// List lays items out as gofmt lays out a doc comment's list, in the text
// PackageDoc returns: "  - " before each item, four spaces before each
// line it continues on, every line wrapped to fit width columns behind the
// comment's "// ".
func List(items []string, width int) string {
	var b strings.Builder
	for _, item := range items {
		line := "  -"
		for _, word := range strings.Fields(item) {
			if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width-3 && strings.TrimSpace(line) != "-" {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + word
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
