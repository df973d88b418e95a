package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"regexp"
	"strings"
)

// caseResult is one test as the framework reported it.
type caseResult struct {
	name    string
	passed  bool
	skipped bool // not run (test.skip, a JUnit skip): neither a pass nor a failure
}

// parseReport reads the per-test results of one grade of lang from the report files the trailer brought back or,
// for Rust, from libtest's per-test lines in the test output: only to compare with the collector's record
// (runSuspect), never the verdict.
func parseReport(lang string, files map[string][]byte, output string) ([]caseResult, error) {
	switch lang {
	case "go":
		return nil, nil // cmd/go's stream goes to the collector alone: no report file to compare
	case "python":
		return parseJUnitXML(files["report.xml"])
	case "javascript":
		return parseJestJSON(files["report.json"])
	case "rust":
		return parseLibtest(output), nil
	case "cpp", "java":
		return parseLines(files["report.txt"])
	}
	return nil, fmt.Errorf("unknown language %q", lang)
}

// goEvent is one line of go test -json (cmd/go's test2json events).
type goEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func eachGoEvent(data []byte, f func(goEvent)) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue // go test may print a line that is not an event (a build failure of another package)
		}
		var e goEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("go test -json report: %v", err)
		}
		f(e)
	}
	return sc.Err()
}

// junitSuites is the part of a JUnit XML report the grader reads: pytest's (<testsuites><testsuite>...) or a bare
// <testsuite>.
type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
	Cases  []junitCase  `xml:"testcase"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string    `xml:"classname,attr"`
	Name    string    `xml:"name,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// parseJUnitXML names each case by the last part of its classname and its name (Class.test_name).
func parseJUnitXML(data []byte) ([]caseResult, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JUnit XML report: %v", err)
	}
	cases := doc.Cases
	for _, s := range doc.Suites {
		cases = append(cases, s.Cases...)
	}
	out := make([]caseResult, 0, len(cases))
	for _, c := range cases {
		class := c.Class
		if i := strings.LastIndexByte(class, '.'); i >= 0 {
			class = class[i+1:]
		}
		failed := c.Failure != nil || c.Error != nil
		out = append(out, caseResult{name: class + "." + c.Name, passed: !failed && c.Skipped == nil, skipped: !failed && c.Skipped != nil})
	}
	return out, nil
}

// jestReport is the part of jest's --json report the grader reads.
type jestReport struct {
	TestResults []struct {
		Name             string `json:"name"`
		Status           string `json:"status"`
		AssertionResults []struct {
			Title  string `json:"title"`
			Status string `json:"status"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// parseJestJSON takes each test by its title; a test file that failed to run at all is a failed case of its own.
func parseJestJSON(data []byte) ([]caseResult, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var r jestReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("jest JSON report: %v", err)
	}
	var out []caseResult
	for _, f := range r.TestResults {
		if f.Status != "passed" && len(f.AssertionResults) == 0 {
			out = append(out, caseResult{name: "test file " + f.Name})
		}
		for _, a := range f.AssertionResults {
			// pending, skipped, todo and disabled are tests jest did not run.
			out = append(out, caseResult{name: a.Title, passed: a.Status == "passed", skipped: a.Status != "passed" && a.Status != "failed"})
		}
	}
	return out, nil
}

var libtestLine = regexp.MustCompile(`(?m)^test (.+) \.\.\. (ok|FAILED|ignored)\s*$`)

// parseLibtest takes libtest's "test path::name ... ok" lines, named by the last part of the path. The grader's
// epilogue test is left out.
func parseLibtest(output string) []caseResult {
	var out []caseResult
	for _, m := range libtestLine.FindAllStringSubmatch(output, -1) {
		name := libtestName(m[1])
		if name == rustEpilogueTest {
			continue
		}
		out = append(out, caseResult{name: name, passed: m[2] == "ok", skipped: m[2] == "ignored"})
	}
	return out
}

const rustEpilogueTest = "zzzz_goalbox_epilogue"

// parseLines reads the grader's own report lines, "pass<TAB>name" (or fail, skip), from the C++ listener and the
// Java launcher.
func parseLines(data []byte) ([]caseResult, error) {
	var out []caseResult
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		status, name, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("report line %q is not status<TAB>name", line)
		}
		out = append(out, caseResult{name: name, passed: status == "pass", skipped: status == "skip"})
	}
	return out, nil
}

// judge compares the reported cases with the expected names: every expected name must be reported passed at least
// as often as the test files define it, and no case may be reported failed. A skipped case counts neither way (an
// expected test that was skipped is then missing). Tests the grader could not name
// beforehand (subtests, macro-made tests) count only by not failing. It returns how many expected tests passed
// and, when the grade fails, why.
func judge(expected []string, got []caseResult) (passed int, why string) {
	passes := map[string]int{}
	var failed []string
	for _, c := range got {
		switch {
		case c.passed:
			passes[c.name]++
		case !c.skipped:
			failed = append(failed, c.name)
		}
	}
	var missing []string
	for _, n := range expected {
		if passes[n] > 0 {
			passes[n]--
			passed++
		} else {
			missing = append(missing, n)
		}
	}
	switch {
	case len(failed) > 0:
		return passed, fmt.Sprintf("%d of %d tests passed; failed: %s", passed, len(expected), limitNames(failed))
	case len(missing) > 0:
		return passed, fmt.Sprintf("%d of %d tests reported passed; not reported passed: %s", passed, len(expected), limitNames(missing))
	}
	return passed, ""
}

// limitNames quotes up to 5 names and says how many more there are.
func limitNames(names []string) string {
	if len(names) <= 5 {
		return quoteNames(names)
	}
	return fmt.Sprintf("%s and %d more", quoteNames(names[:5]), len(names)-5)
}
