package goalbox

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The repository's docs are held to the contract and to themselves: every tool name they mention is one this
// package defines, every relative link leads to a file (and its #anchor to a heading of it), and neither the docs
// nor the Go sources point at a tracker (an issue by its number, a section of the brief) instead of saying why.

// repoRoot is the repository's root: this module's folder (the test reads the whole repository, so it lives in the
// module that is the repository's root, not in a package of pkg).
const repoRoot = "."

// docFiles are the Markdown files a reader of the repository meets: the README, SECURITY.md, docs/ and the
// examples' README.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md", "examples/README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(more) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", repoRoot, err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(repoRoot, m)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fences matches a fenced code block, whose text is not Markdown.
var fences = regexp.MustCompile("(?ms)^```.*?^```")

func TestDocsNameOnlyRealTools(t *testing.T) {
	var defined []string
	src, _ := filepath.Glob(filepath.Join(repoRoot, "pkg", "protocol", "*.go"))
	decl := regexp.MustCompile(`Tool[A-Za-z]+\s*=\s*"(sandbox_[a-z_]+)"`)
	for _, f := range src {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			defined = append(defined, m[1])
		}
	}
	if len(defined) < 17 {
		t.Fatalf("found only %d tool names in this package: %v", len(defined), defined)
	}
	// Names that look like tools but are not: the agent's stop reason for a failed tool server.
	notTools := []string{"sandbox_error"}
	// A name followed by a file extension (sandbox_options.go) is a file, not a tool.
	mention := regexp.MustCompile(`\bsandbox_[a-z_]+(\.[a-z]+\b)?`)
	for _, doc := range docFiles(t) {
		for _, name := range mention.FindAllString(readDoc(t, doc), -1) {
			if strings.Contains(name, ".") {
				continue
			}
			if !slices.Contains(defined, name) && !slices.Contains(notTools, name) {
				t.Errorf("%s names a tool %q that pkg/protocol does not define (it defines %s)", doc, name, strings.Join(defined, ", "))
			}
		}
	}
}

// anchor is the GitHub anchor of a heading: lower case, what is neither a letter, a digit, "-" nor "_" dropped,
// spaces as dashes.
func anchor(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of text's headings; a repeated heading gets -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	heading := regexp.MustCompile(`(?m)^#{1,6}\s+(.*)$`)
	for _, m := range heading.FindAllStringSubmatch(fences.ReplaceAllString(text, ""), -1) {
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range docFiles(t) {
		text := fences.ReplaceAllString(readDoc(t, doc), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // a URL
			}
			path, frag, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(doc), path))
			}
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(file))); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !anchors(readDoc(t, file))[frag] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", doc, target, file, frag)
			}
		}
	}
}

func TestNoTrackerReferences(t *testing.T) {
	tracker := regexp.MustCompile(`(?i)\bissue #?[0-9]+\b|\bBRIEF §|\bthe isolation issue\b`)
	check := func(name, text string) {
		for i, line := range strings.Split(text, "\n") {
			if tracker.MatchString(line) {
				t.Errorf("%s:%d points at a tracker instead of saying why: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	for _, doc := range docFiles(t) {
		check(doc, readDoc(t, doc))
	}
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		var comments []string
		for _, line := range strings.Split(string(b), "\n") {
			if _, c, ok := strings.Cut(line, "//"); ok {
				comments = append(comments, c)
			} else {
				comments = append(comments, "")
			}
		}
		check(filepath.ToSlash(rel), strings.Join(comments, "\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
