package bench

import "regexp"

// A naive grader decides by the test command's exit code and the runner's success summary in its text output
// (legacySucceeded below is that check). A solution runs inside the test process and can print that summary itself,
// so the cheat tests use it to show each cheat fooling such a grader before they show the real grader failing it.

// Success summaries each runner prints only when every test it ran passed (and it ran some).
var (
	pytestPassed = regexp.MustCompile(`(?m)\b\d+ passed\b`)
	pytestBad    = regexp.MustCompile(`(?m)\b\d+ (failed|errors?)\b`)
	goOK         = regexp.MustCompile(`(?m)^ok\s`)
	goPassLine   = regexp.MustCompile(`(?m)^\s*--- PASS: `)
	goBad        = regexp.MustCompile(`(?m)^(FAIL|---\s*FAIL|panic:)`)
	cargoOK      = regexp.MustCompile(`(?m)^test result: ok\. [1-9]\d* passed; 0 failed`)
	cargoBad     = regexp.MustCompile(`(?m)^test result: FAILED`)
	cargoResult  = regexp.MustCompile(`(?m)^test result: ok\.`)
	cargoBinary  = regexp.MustCompile(`(?m)^\s+(Running|Doc-tests) `)
	jestOK       = regexp.MustCompile(`(?m)^Tests:.*\b\d+ passed, \d+ total`)
	jestBad      = regexp.MustCompile(`(?m)^Tests:.*\bfailed\b`)
	catchOK      = regexp.MustCompile(`(?m)^All tests passed \(\d+ assertions? in \d+ test cases?\)`)
	junitOK      = regexp.MustCompile(`(?m)\[\s*[1-9]\d* tests successful\s*\]`)
	junitBad     = regexp.MustCompile(`(?m)\[\s*[1-9]\d* tests (failed|aborted)\s*\]`)
)

// legacySucceeded says whether out carries the test runner's success summary and no failure summary.
func legacySucceeded(lang, out string) bool {
	ok, bad := func(string) bool { return false }, func(string) bool { return false }
	switch lang {
	case "python":
		ok, bad = pytestPassed.MatchString, pytestBad.MatchString
	case "go":
		ok = func(s string) bool { return goOK.MatchString(s) && goPassLine.MatchString(s) }
		bad = goBad.MatchString
	case "rust":
		// Every test binary cargo ran must have reported: one that exited early says nothing.
		ok = func(s string) bool {
			return cargoOK.MatchString(s) && len(cargoResult.FindAllStringIndex(s, -1)) == len(cargoBinary.FindAllStringIndex(s, -1))
		}
		bad = cargoBad.MatchString
	case "javascript":
		ok, bad = jestOK.MatchString, jestBad.MatchString
	case "cpp":
		ok = catchOK.MatchString
	case "java":
		ok, bad = junitOK.MatchString, junitBad.MatchString
	}
	return ok(out) && !bad(out)
}
