package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Grader grades workspaces with each track's own test command. One Grader serves many exercises and workers at
// once; it probes each language's toolchain the first time it is needed.
type Grader struct {
	Toolchains Toolchains
	Timeout    time.Duration // per grade; DefaultGradeTimeout when zero
	probes     probes
}

// DefaultGradeTimeout bounds one test run, compile included. Aider allows 3 minutes.
const DefaultGradeTimeout = 3 * time.Minute

// NewGrader returns a Grader with the default toolchain layout.
func NewGrader() *Grader { return &Grader{Toolchains: DefaultToolchains()} }

// GradeResult is the outcome of one grade. Ungradable is set when this machine cannot grade the exercise: found
// before running (nothing was run then), or from the run (the restored tests do not build against a library
// version installed here). Passed then is false and the exercise counts neither way. Suspect is set when the grade
// shows signs of tampering (see grade); Passed is then false whatever the tests said.
type GradeResult struct {
	Passed     bool     `json:"passed"`
	Ungradable string   `json:"ungradable,omitempty"`
	Suspect    string   `json:"suspect,omitempty"`
	Verdict    string   `json:"verdict,omitempty"` // why a grade that is neither suspect nor ungradable failed
	Tests      int      `json:"tests"`             // tests the pristine test files define (that the grader could name)
	TestsOK    int      `json:"tests_passed"`      // of those, reported passed by the framework
	Command    string   `json:"command,omitempty"`
	ExitCode   int      `json:"exit_code"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Output     string   `json:"output,omitempty"`
	Seconds    float64  `json:"seconds"`
	Restored   []string `json:"restored,omitempty"` // files put back or removed before the run
}

// Grade restores ex's tests and build files in ws from the source, adds the grader's harness (see harness.go),
// runs the track's test command in the sandbox, reads the framework's per-test results and the epilogue back,
// and reports. It passes only when the command exits 0, every test of the pristine test files is reported passed
// (by name and count), every epilogue carries this grade's nonce, and nothing is suspect. An error means the
// grade could not be done (sandbox or workspace failure), not that the tests failed.
func (g *Grader) Grade(ctx context.Context, sb loop.Sandbox, ex Exercise, ws Workspace) (GradeResult, error) {
	return g.grade(ctx, sb, ex, ws, false)
}

func (g *Grader) grade(ctx context.Context, sb loop.Sandbox, ex Exercise, ws Workspace, reference bool) (GradeResult, error) {
	cmd, why, err := g.command(ctx, sb, ex, reference)
	if err != nil {
		return GradeResult{}, err
	}
	if why != "" {
		return GradeResult{Ungradable: why}, nil
	}
	expected, err := expectedTests(ex)
	if err != nil {
		return GradeResult{}, err
	}
	h, err := g.harnessFor(ex, cmd)
	if err != nil {
		return GradeResult{}, err
	}
	// A remote sandbox's workspace is brought back to the copy, restored there, and sent again: the one Restore.
	m, remote := sb.(mirror)
	if remote {
		if err := m.pull(ctx, ex, ws); err != nil {
			return GradeResult{}, fmt.Errorf("%s: %w", ex.ID(), err)
		}
	}
	restored, err := Restore(ex, ws)
	if err != nil {
		return GradeResult{}, err
	}
	suspect, err := suspectSource(ex, ws)
	if err != nil {
		return GradeResult{}, fmt.Errorf("%s: reading the solution: %w", ex.ID(), err)
	}
	if err := writeHarness(ws, h); err != nil {
		return GradeResult{}, fmt.Errorf("%s: %w", ex.ID(), err)
	}
	if remote {
		if err := m.push(ctx, ws); err != nil {
			return GradeResult{}, fmt.Errorf("%s: %w", ex.ID(), err)
		}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultGradeTimeout
	}
	key, nonce := newKey(), newNonce()
	command, stdin := gradeCommand(h, key, nonce)
	start := time.Now()
	run, err := runCommandStdin(ctx, sb, command, ws.Rel, stdin, timeout)
	elapsed := time.Since(start)
	if err != nil {
		return GradeResult{}, fmt.Errorf("%s: running the tests: %w", ex.ID(), err)
	}
	if remote {
		if err := m.unharness(ctx, ws, h); err != nil {
			return GradeResult{}, fmt.Errorf("%s: removing the grader's files: %w", ex.ID(), err)
		}
	}
	stdout, rec, recorded, recordSuspect, recordErr := takeRecord(run.Stdout, key)
	testOut, got, complete, trailerSuspect, trailerErr := parseTrailer(stdout)
	code := run.ExitCode
	if recorded {
		code = rec.Code
	}
	out := loop.CommandOutput(protocol.RunCommandOutput{Stdout: testOut, Stderr: run.Stderr})
	res := GradeResult{
		Command:  cmd,
		ExitCode: code,
		TimedOut: run.ExitCode == -1 && elapsed >= timeout-time.Second,
		Output:   out,
		Seconds:  elapsed.Seconds(),
		Restored: restored,
		Tests:    len(expected),
		Suspect:  suspect,
	}
	st, streamErr := readStream(ex.Lang, rec.Lines, nonce, h.ends)
	if ex.Lang == "go" {
		// cmd/go wrote its event stream to the collector: the human output is rendered from it.
		res.Output = st.text + out
	}
	res.TestsOK, res.Verdict = judge(expected, st.cases)
	if err := errors.Join(recordErr, trailerErr, streamErr); err != nil {
		res.Verdict = "the test results could not be read: " + err.Error()
	}
	ended, epilogueWhy := checkEnds(h, st, nonce)
	res.Suspect = cmp.Or(res.Suspect, recordSuspect, trailerSuspect)
	if res.Suspect == "" && complete && recorded {
		reported, _ := parseReport(ex.Lang, got.files, testOut)
		res.Suspect = runSuspect(h, got, st, reported, expected, nonce, run.Stdout+run.Stderr, code, ended, epilogueWhy)
	}
	switch {
	case res.TimedOut:
		res.Verdict = fmt.Sprintf("the tests timed out after %s", timeout)
	case !recorded && res.Verdict == "":
		res.Verdict = "the grade's collector left no record (killed, or its output was cut)"
	case !complete && res.Verdict == "":
		res.Verdict = "the grade's command did not finish its trailer (killed, or its output was cut)"
	case res.Verdict == "" && !ended:
		res.Verdict = "the test process ended before its framework finished: " + epilogueWhy
	case res.Verdict == "" && code != 0:
		res.Verdict = fmt.Sprintf("the test command exited with status %d", code)
	}
	res.Passed = res.Verdict == "" && res.Suspect == ""
	if !res.Passed && ex.Lang == "java" && assertjTooOld.MatchString(out) {
		// The restored tests do not compile against this machine's AssertJ: no solution could pass here.
		res.Ungradable = "the tests use AssertJ API newer than the installed AssertJ (Debian 12 has 3.14; build.gradle asks for 3.25)"
	}
	return res, nil
}

// Command is the test command Grade runs for ex, from the exercise folder, or why ex cannot be graded here. The
// agent may show it to the model so that its own test runs match the grader's.
func (g *Grader) Command(ctx context.Context, sb loop.Sandbox, ex Exercise) (cmd, ungradable string, err error) {
	return g.command(ctx, sb, ex, false)
}

func (g *Grader) command(ctx context.Context, sb loop.Sandbox, ex Exercise, reference bool) (string, string, error) {
	tc, err := g.probe(ctx, sb, ex.Lang)
	if err != nil {
		return "", "", err
	}
	if tc.missing != "" {
		return "", tc.missing, nil
	}
	t := g.Toolchains
	switch ex.Lang {
	case "python":
		// Isolated (-I): the working folder is not put first on sys.path, so a pytest.py (or json.py...) the model
		// left there cannot stand in for the real one; no user site (usercustomize.py) and no PYTHON* variables.
		// No bytecode (-B) or cache files: the workspace stays as the model left it.
		return shellQuote(tc.python) + " -I -B -m pytest -p no:cacheprovider", "", nil
	case "go":
		if !hasGoTests(ex) {
			return "", "the test files define no tests (a deprecated exercise whose task is to write the tests): nothing to grade", nil
		}
		// GOTOOLCHAIN=local: a go.mod asking for a newer Go must not try to download one. -v prints a
		// "--- PASS" per test, which succeeded requires: without it, a solution whose init calls os.Exit(0)
		// gets an "ok" from go test having run nothing.
		return "GOTOOLCHAIN=local GOFLAGS=-mod=mod go test -v ./...", "", nil
	case "rust":
		manifest, err := rustManifest(ex, reference)
		if err != nil {
			return "", "", err
		}
		if missing := missingCrates(manifest, tc.crates); len(missing) > 0 {
			return "", "needs crates from crates.io, which cannot be fetched offline: " + strings.Join(missing, "; "), nil
		}
		return "cargo test --offline" +
			" --config " + shellQuote(`source.crates-io.replace-with="goalbox-offline"`) +
			" --config " + shellQuote(`source.goalbox-offline.directory="`+t.CargoRegistry+`"`) +
			" -- --include-ignored", "", nil
	case "javascript":
		// The package.json test script is "jest ./*"; jest comes from the shared install through a symlink.
		return "ln -sfn " + shellQuote(t.JSModules) + " node_modules && node node_modules/jest/bin/jest.js --ci ./*", "", nil
	case "cpp":
		if !tc.boost && needsBoost(ex) {
			return "", "needs the Boost date_time library (Debian: apt-get install libboost-date-time-dev)", nil
		}
		cmake := "cmake -DEXERCISM_RUN_ALL_TESTS=1"
		env := ""
		if t.CompilerCache {
			cmake += " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
			// Paths relative to the exercise and no working folder in the hash: every exercise shares
			// one compiled copy of Catch's main.
			env = `export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1 && `
		}
		return env + "rm -rf build && mkdir build && cd build && " + cmake + " .. && make", "", nil
	case "java":
		jars, missing, err := javaJars(ex)
		if err != nil {
			return "", "", err
		}
		if len(missing) > 0 {
			return "", "needs Maven libraries that cannot be fetched offline: " + strings.Join(missing, ", "), nil
		}
		return javaCommand(t.JavaLibs, jars), "", nil
	}
	return "", "", fmt.Errorf("unknown language %q", ex.Lang)
}

// javaCommand compiles main and test sources in one javac run and runs the tests with the JUnit 5 console
// launcher: Gradle cannot run offline here. Libraries come first on the class path so a class in the solution
// cannot stand in for one of JUnit's or AssertJ's. Both JVMs stop at the C1 compiler and use the serial
// collector: these runs last seconds, and that more than halves their CPU time.
func javaCommand(libs string, extra []string) string {
	lib, compile := javaCompile(libs, extra, "")
	return compile + "java " + javaFlags + " -jar " + shellQuote(lib[0]) + " -cp " + shellQuote(strings.Join(lib[1:], ":")+":"+javaOut) +
		" --scan-classpath " + javaOut + " --disable-banner --details=tree --fail-if-no-tests"
}

// javaOut is where the Java commands compile to; javaFlags are their JVMs' flags.
const (
	javaOut   = "build/goalbox"
	javaFlags = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
)

// javaCompile is the class path of the Java commands (JUnit's console launcher first, then AssertJ and the
// exercise's extra jars) and the start of their command line: a fresh javaOut and one javac run over the main and
// test sources and more.
func javaCompile(libs string, extra []string, more string) (lib []string, compile string) {
	lib = []string{path.Join(libs, "junit-platform-console-standalone.jar"), path.Join(libs, "assertj-core.jar")}
	for _, j := range extra {
		lib = append(lib, path.Join(libs, j))
	}
	return lib, "rm -rf " + javaOut + " && mkdir -p " + javaOut + " && " +
		"javac -J" + strings.ReplaceAll(javaFlags, " ", " -J") + " -nowarn -encoding UTF-8 -d " + javaOut + " -cp " + shellQuote(strings.Join(lib, ":")) +
		" $(find src/main/java src/test/java -name '*.java')" + more + " && "
}

// checkEnds says whether the pipe carried every end line h expects, each with this grade's nonce, and if not, why.
func checkEnds(h harness, st stream, nonce string) (bool, string) {
	for _, n := range st.ends {
		if n != nonce {
			return false, "an end line that does not carry this grade's nonce"
		}
	}
	if len(st.ends) < h.ends {
		return false, fmt.Sprintf("%d of %d end lines (the framework's run did not finish)", len(st.ends), h.ends)
	}
	return true, ""
}

// runSuspect is the reason, from the run, to distrust a grade, or "": the solution showed the nonce, an end line
// was forged or reports tampering, a test result came after the framework's end, the report file says more passed
// than the pipe did, the run changed the tests or the grader's files, or the process exited with status 0 before
// the framework's end (a test run that ends early does not exit 0 by itself: something called exit).
func runSuspect(h harness, got collected, st stream, reported []caseResult, expected []string, nonce, out string, code int, ended bool, why string) string {
	if strings.Contains(out, nonce) {
		return "the test output shows this grade's nonce: solution code read the grader's secret"
	}
	for _, n := range st.ends {
		if n != nonce {
			return "an end line that is not the grader's: it does not carry this grade's nonce"
		}
	}
	for _, note := range st.notes {
		if t, ok := strings.CutPrefix(note, "tampered "); ok {
			return "the solution patched the test framework's assertions: " + limitNames(strings.Fields(t)) + " replaced during the run"
		}
	}
	if len(st.late) > 0 {
		return "test results arrived after the framework's end: " + limitNames(st.late) + " (solution code ran after the tests and wrote them)"
	}
	if len(reported) > 0 {
		live, _ := judge(expected, st.cases)
		if after, _ := judge(expected, reported); after > live {
			return fmt.Sprintf("the test report says %d tests passed, the framework reported %d as they ran: the report was rewritten after the tests", after, live)
		}
	}
	if changed := changedFiles(h.checked, got.sums); len(changed) > 0 {
		return "the test run changed or removed " + strings.Join(changed, ", ") + ": solution code wrote outside its files"
	}
	if code == 0 && !ended {
		return "the test process exited with status 0 before its framework finished (" + why + "): solution code ended it early"
	}
	return ""
}
