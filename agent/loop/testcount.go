package loop

// Counting failing tests in a verify's output, to tell a regression (a later state that fails more than an earlier
// one) from progress. Only the summaries test runners print of themselves are read: go test's "--- FAIL:" lines and
// package verdicts, pytest's closing line, jest's "Tests:" line, cargo's "test result:" lines. When none of them
// is there the count is unknown, and two unknown states are never compared. A run that printed a runner's package
// verdict but no test counts (go test's "[build failed]", a cargo build error) failed before any test ran: that is
// counted as broken, worse than any number of failing tests.
//
// TestCount and its comparison are exported for the benchmark runner, which compares its tries by the grader's
// per-test results (not by output) with the same rule: more failing tests is worse, a tie is not.

import (
	"regexp"
	"strconv"
	"strings"
)

// TestCount is what a verify's output (or a grader's per-test results) says about its tests.
type TestCount struct {
	Known  bool // the output holds a test runner's summary
	Broken bool // the runner reported failure before any test ran (a build error)
	Failed int
}

// Worse reports whether c is worse than an earlier count b: more failing tests, or broken where b ran.
func (c TestCount) Worse(b TestCount) bool {
	switch {
	case !b.Known || !c.Known:
		return false
	case c.Broken != b.Broken:
		return c.Broken
	}
	return c.Failed > b.Failed
}

// String says the count in words for the model and the summary.
func (c TestCount) String() string {
	switch {
	case !c.Known:
		return "unknown"
	case c.Broken:
		return "the tests did not build or run"
	case c.Failed == 1:
		return "1 failing test"
	}
	return strconv.Itoa(c.Failed) + " failing tests"
}

var (
	goFailLine   = regexp.MustCompile(`(?m)^--- FAIL: `)
	goPkgVerdict = regexp.MustCompile(`(?m)^(ok|FAIL|\?)\s+\S+`)
	goNoRun      = regexp.MustCompile(`(?m)^FAIL\s+\S+\s+\[(build|setup) failed\]`)
	pytestLine   = regexp.MustCompile(`(?m)^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s`)
	jestLine     = regexp.MustCompile(`(?m)^Tests:\s+(.+)$`)
	cargoLine    = regexp.MustCompile(`(?m)^test result: \w+\. (\d+) passed; (\d+) failed;`)
	cargoNoRun   = regexp.MustCompile(`(?m)^error(\[E\d+\])?: (could not compile|aborting)`)
	countOf      = func(s, word string) int {
		m := regexp.MustCompile(`(\d+) ` + word).FindStringSubmatch(s)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
)

// countTests reads the failing tests from a verify's exit code and output.
func countTests(exit int, out string) TestCount {
	if exit == 0 {
		return TestCount{Known: true}
	}
	if ms := cargoLine.FindAllStringSubmatch(out, -1); ms != nil {
		c := TestCount{Known: true}
		for _, m := range ms {
			n, _ := strconv.Atoi(m[2])
			c.Failed += n
		}
		return c
	}
	if cargoNoRun.MatchString(out) {
		return TestCount{Known: true, Broken: true}
	}
	if m := jestLine.FindStringSubmatch(out); m != nil {
		return TestCount{Known: true, Failed: countOf(m[1], "failed")}
	}
	if ms := pytestLine.FindAllStringSubmatch(out, -1); ms != nil {
		last := ms[len(ms)-1][1]
		if strings.Contains(last, "passed") || strings.Contains(last, "failed") || strings.Contains(last, "error") {
			return TestCount{Known: true, Failed: countOf(last, "failed") + countOf(last, "error")}
		}
	}
	if goPkgVerdict.MatchString(out) || goFailLine.MatchString(out) {
		n := len(goFailLine.FindAllStringIndex(out, -1))
		if n == 0 || goNoRun.MatchString(out) {
			// A package failed with no test named: it did not build, or its tests crashed before reporting.
			return TestCount{Known: true, Broken: true, Failed: n}
		}
		return TestCount{Known: true, Failed: n}
	}
	return TestCount{}
}
