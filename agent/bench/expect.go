package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// expectedTests lists the tests that ex's pristine test files define, each under the name its framework reports it
// by, as a multiset: a name is listed as often as the files define it. A grade passes only when every one of them is
// reported passed that many times. The names are read from the files as the workspace holds them (every test
// active), never from a run: a run's list of tests is the solution's to forge.
//
// Names that only a macro or a loop produces at run time (a few Rust tests made by macro_rules!) cannot be read
// this way and are not listed; a grade still fails when any test is reported failed.
func expectedTests(ex Exercise) ([]string, error) {
	var names []string
	files := ex.Test
	if ex.Lang == "go" {
		files = slices.Concat(ex.Test, ex.Editor)
	}
	for _, f := range files {
		data, _, err := sourceContent(ex, f)
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", ex.ID(), f, err)
		}
		var found []string
		switch ex.Lang {
		case "go":
			if !strings.HasSuffix(f, "_test.go") {
				continue
			}
			found, err = goTestNames(f, data)
		case "python":
			found = pythonTestNames(f, data)
		case "javascript":
			found = jestTestNames(data)
		case "rust":
			found = rustTestNames(data)
		case "cpp":
			if path.Ext(f) != ".cpp" {
				continue
			}
			found = catchTestNames(data)
		case "java":
			found = junitTestNames(data)
		default:
			return nil, fmt.Errorf("unknown language %q", ex.Lang)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", ex.ID(), f, err)
		}
		names = append(names, found...)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: found no test in the test files %v", ex.ID(), files)
	}
	return names, nil
}

// goTestNames are the top-level TestXxx(*testing.T) functions and the examples that go test runs (those with an
// output comment), as go test -json names them.
func goTestNames(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !isGoTestName(fn.Name.Name) || fn.Type.Params == nil || len(fn.Type.Params.List) != 1 {
			continue
		}
		if star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr); ok {
			if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "T" {
				out = append(out, fn.Name.Name)
			}
		}
	}
	for _, e := range doc.Examples(file) {
		if e.Output != "" || e.EmptyOutput {
			out = append(out, "Example"+e.Name)
		}
	}
	return out, nil
}

// isGoTestName is go test's rule: Test, then nothing or a character that is not a lower-case letter.
func isGoTestName(n string) bool {
	rest, ok := strings.CutPrefix(n, "Test")
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}

var (
	pyClass = regexp.MustCompile(`^class\s+(\w+)`)
	pyTest  = regexp.MustCompile(`^(\s*)def\s+(test\w*)\s*\(`)
)

// pythonTestNames are Class.test_name for test methods and module.test_name for module-level test functions:
// the last part of the JUnit report's classname, a dot, and its name.
func pythonTestNames(file string, src []byte) []string {
	module := strings.TrimSuffix(path.Base(file), ".py")
	class := ""
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if m := pyClass.FindStringSubmatch(line); m != nil {
			class = m[1]
			continue
		}
		if line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '#' {
			class = "" // a top-level statement ends the class
		}
		if m := pyTest.FindStringSubmatch(line); m != nil {
			switch {
			case m[1] == "":
				out = append(out, module+"."+m[2])
			case class != "":
				out = append(out, class+"."+m[2])
			}
		}
	}
	return out
}

// jestCall finds test( and it( calls (not a method such as regexp.test(), not test.skip): the title follows.
var jestCall = regexp.MustCompile(`(?:^|[^.\w$])(?:test|it)(?:\.only)?\(\s*`)

// jestTestNames are the titles of the active tests, as jest's report gives them (assertionResults[].title).
func jestTestNames(src []byte) []string {
	var out []string
	for _, m := range jestCall.FindAllIndex(src, -1) {
		if title, ok := jsStringAt(src[m[1]:]); ok {
			out = append(out, title)
		}
	}
	return out
}

// jsStringAt reads the JavaScript string literal s starts with ('...', "..." or a template without ${}).
func jsStringAt(s []byte) (string, bool) {
	if len(s) == 0 || !strings.ContainsRune(`'"`+"`", rune(s[0])) {
		return "", false
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), true
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case c == '$' && q == '`' && i+1 < len(s) && s[i+1] == '{':
			return "", false // built at run time
		case c == '\n' && q != '`':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

var (
	rustTestAttr = regexp.MustCompile(`^\s*#\[test\]`)
	rustFn       = regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\$?\w+)`)
	rustAttr     = regexp.MustCompile(`^\s*#\[`)
	rustSkip     = regexp.MustCompile(`^\s*(#\[|//|$)`)
	rustFeature  = regexp.MustCompile(`#\[cfg\(.*\bfeature\s*=`)
	rustMod      = regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{`)
)

// rustTestNames are the #[test] functions that cargo test compiles, by their own name (libtest prefixes the
// module path, which the grader drops). Left out: tests behind a cargo feature (#[cfg(feature = ...)] on the test
// or on a module around it: the grader turns no feature on, as Aider does not), and tests written inside
// macro_rules! (fn $name), which are made at expansion.
func rustTestNames(src []byte) []string {
	var out []string
	lines := strings.Split(string(src), "\n")
	depth, offBelow := 0, -1 // offBelow: the depth at which a feature-gated module opened; -1 when none
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if offBelow < 0 && rustMod.MatchString(line) && featureGated(lines, i) {
			offBelow = depth
		}
		if offBelow < 0 && rustTestAttr.MatchString(line) && !featureGated(lines, i) {
			for j := i + 1; j < len(lines) && j < i+10; j++ {
				if rustFeature.MatchString(lines[j]) {
					break
				}
				if m := rustFn.FindStringSubmatch(lines[j]); m != nil {
					if !strings.HasPrefix(m[1], "$") {
						out = append(out, m[1])
					}
					break
				}
				if !rustSkip.MatchString(lines[j]) {
					break
				}
			}
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if offBelow >= 0 && depth <= offBelow {
			offBelow = -1
		}
	}
	return out
}

// featureGated says whether the attributes right above line i put it behind a cargo feature.
func featureGated(lines []string, i int) bool {
	for j := i - 1; j >= 0 && rustAttr.MatchString(lines[j]); j-- {
		if rustFeature.MatchString(lines[j]) {
			return true
		}
	}
	return false
}

// catchCase is TEST_CASE( then the name's opening quote, comments allowed between (clang-format switches).
var catchCase = regexp.MustCompile(`\bTEST_CASE\((?:\s|//[^\n]*\n|/\*(?:[^*]|\*[^/])*\*/)*"`)

// catchTestNames are the TEST_CASE names that the grader's build compiles: EXERCISM_RUN_ALL_TESTS is defined,
// EXERCISM_TEST_SUITE and EXERCISM_INCLUDE_BENCHMARK are not (see cppActive).
func catchTestNames(src []byte) []string {
	active := cppActive(src)
	var out []string
	for _, m := range catchCase.FindAllIndex(src, -1) {
		if !active(m[0]) {
			continue
		}
		if name, ok := jsStringAt(src[m[1]-1:]); ok { // a C string literal reads the same for these names
			out = append(out, name)
		}
	}
	return out
}

var cppDirective = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$`)

// cppActive tells, for an offset in src, whether the preprocessor keeps it, for the macros the grader's build sets.
// Only the exercises' own switches are known; any other condition counts as true.
func cppActive(src []byte) func(off int) bool {
	type span struct{ start, end int }
	var inactive []span
	type frame struct {
		start  int
		active bool
	}
	var stack []frame
	// closeTop ends the innermost branch at end, recording it when the preprocessor drops it.
	closeTop := func(end int) frame {
		top := stack[len(stack)-1]
		if !top.active {
			inactive = append(inactive, span{top.start, end})
		}
		return top
	}
	for _, m := range cppDirective.FindAllSubmatchIndex(src, -1) {
		kind, cond := string(src[m[2]:m[3]]), string(src[m[4]:m[5]])
		switch {
		case kind == "if" || kind == "ifdef" || kind == "ifndef" || kind == "elif":
			on := !strings.Contains(cond, "EXERCISM_TEST_SUITE") && !strings.Contains(cond, "EXERCISM_INCLUDE_BENCHMARK")
			if kind == "ifndef" || strings.Contains(cond, "!") {
				on = !on
			}
			if kind == "elif" && len(stack) > 0 {
				closeTop(m[0])
				stack[len(stack)-1] = frame{m[1], on}
				continue
			}
			stack = append(stack, frame{m[1], on})
		case len(stack) == 0: // an else or endif without its if
		case kind == "else":
			stack[len(stack)-1] = frame{m[1], !closeTop(m[0]).active}
		case kind == "endif":
			closeTop(m[0])
			stack = stack[:len(stack)-1]
		}
	}
	return func(off int) bool {
		for _, s := range inactive {
			if off >= s.start && off < s.end {
				return false
			}
		}
		return true
	}
}

var (
	junitTest   = regexp.MustCompile(`^\s*@Test\b`)
	junitMethod = regexp.MustCompile(`\b(\w+)\s*\([^)]*\)\s*(throws\s[\w.,\s]+)?\{?\s*$`)
)

// junitTestNames are the @Test methods' names, which the grader's launcher reports (MethodSource).
func junitTestNames(src []byte) []string {
	var out []string
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		if !junitTest.MatchString(lines[i]) {
			continue
		}
		for j := i + 1; j < len(lines) && j < i+10; j++ {
			l := strings.TrimSpace(lines[j])
			if l == "" || strings.HasPrefix(l, "@") || strings.HasPrefix(l, "//") {
				continue
			}
			if m := junitMethod.FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
			break
		}
	}
	return out
}

// quoteNames renders names for a message.
func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
