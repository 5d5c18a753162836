package docnames

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// link matches a Markdown link or image and its target: [text](target).
// A target with a title ("… "title"") keeps only its path.
var link = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// scheme matches a link to the web or mail (https:, mailto:), which the
// check does not follow.
var scheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

// anchors are the heading anchors of the Markdown text, as GitHub makes
// them: lower case, punctuation dropped but for - and _, each space a -,
// and -1, -2… after a repeat. Headings inside fenced code are none.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if fenced || level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(line[level:])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// brokenLinks lists the relative links of the Markdown doc at path (from
// the repository's root at dir) that lead nowhere: to no file or folder of
// the repository, or to a heading anchor the Markdown file has not.
// Links to the web (a scheme such as https:) and mail are not followed.
func brokenLinks(dir, path string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return nil, err
	}
	var broken []string
	fenced := false
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			if why := checkTarget(dir, path, target); why != "" {
				broken = append(broken, target+": "+why)
			}
		}
	}
	return broken, nil
}

// checkTarget says what is wrong with target, a link of the doc at path, or
// "" where nothing is.
func checkTarget(dir, path, target string) string {
	file, anchor, _ := strings.Cut(target, "#")
	to := path
	if file != "" {
		to = filepath.Join(filepath.Dir(path), file)
	}
	if to == ".." || strings.HasPrefix(to, ".."+string(filepath.Separator)) {
		return "outside the repository"
	}
	info, err := os.Stat(filepath.Join(dir, to))
	if err != nil {
		return "no such file or folder"
	}
	if anchor == "" {
		return ""
	}
	if info.IsDir() || !strings.HasSuffix(to, ".md") {
		return "an anchor into something that is not a Markdown file"
	}
	text, err := os.ReadFile(filepath.Join(dir, to))
	if err != nil {
		return err.Error()
	}
	if !anchors(string(text))[anchor] {
		return "no heading of " + to + " has the anchor #" + anchor
	}
	return ""
}

// TestTheDocsLinksLeadSomewhere: every relative link of README.md,
// CHANGES.md, docs/*.md and dra/README.md leads to a file or folder of the
// repository, and a link to a heading to a heading that exists.
func TestTheDocsLinksLeadSomewhere(t *testing.T) {
	for _, path := range markdownDocs(t) {
		broken, err := brokenLinks(root, path)
		require.NoError(t, err)
		assert.Empty(t, broken, "%s links to these, which are not there", path)
	}
}

// TestTheLinkCheckFindsABrokenLink: the check is shown to catch a link to a
// file or a heading that is not there, and to pass those that are.
func TestTheLinkCheckFindsABrokenLink(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs", "sub"), 0o755))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("README.md", "# Top\n\n## Settings: the GPUINIT_* variables\n\n## Again\n\n## Again\n\n"+
		"```\n## Not a heading\n[in code](nowhere.md)\n```\n")
	write(filepath.Join("docs", "CI.md"), "# CI\n\n### JSON schema (`-json`, schema `gpuprobe/v1`)\n")
	for _, tc := range []struct {
		link   string
		broken string // what the check says; "" where the link leads somewhere
	}{
		{"../README.md", ""},
		{"../README.md#settings-the-gpuinit_-variables", ""},
		{"../README.md#again-1", ""},
		{"../README.md#again-2", "no heading of README.md has the anchor #again-2"},
		{"../README.md#not-a-heading", "no heading of README.md has the anchor #not-a-heading"},
		{"#json-schema--json-schema-gpuprobev1", ""},
		{"CI.md#ci", ""},
		{"sub", ""},
		{"sub/", ""},
		{"missing.md", "no such file or folder"},
		{"../missing/README.md", "no such file or folder"},
		{"sub#x", "an anchor into something that is not a Markdown file"},
		{"../../outside.md", "outside the repository"},
		{"https://example.org/nowhere", ""},
		{"mailto:someone@example.org", ""},
	} {
		write(filepath.Join("docs", "links.md"), "# Links\n\nSee [it]("+tc.link+").\n")
		if tc.link[0] == '#' { // an anchor of the file itself: give it the heading
			write(filepath.Join("docs", "links.md"), "# Links\n\n## JSON schema (`-json`, schema `gpuprobe/v1`)\n\nSee [it]("+tc.link+").\n")
		}
		broken, err := brokenLinks(dir, filepath.Join("docs", "links.md"))
		require.NoError(t, err)
		if tc.broken == "" {
			assert.Empty(t, broken, tc.link)
		} else {
			assert.Equal(t, []string{tc.link + ": " + tc.broken}, broken)
		}
	}
	inCode, err := brokenLinks(dir, "README.md")
	require.NoError(t, err)
	assert.Empty(t, inCode, "a link in fenced code is not followed")
}
