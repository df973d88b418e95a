package bench

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
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
// version installed here). Passed then is false and the exercise counts neither way.
type GradeResult struct {
	Passed     bool     `json:"passed"`
	Ungradable string   `json:"ungradable,omitempty"`
	Command    string   `json:"command,omitempty"`
	ExitCode   int      `json:"exit_code"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Output     string   `json:"output,omitempty"`
	Seconds    float64  `json:"seconds"`
	Restored   []string `json:"restored,omitempty"` // files put back or removed before the run
}

// Grade restores ex's tests and build files in ws from the source, runs the track's test command in the sandbox
// and reports. Pass means exit 0 and the test runner's own success summary in the output, so a solution that
// exits early with status 0 does not pass. An error means the grade could not be done (sandbox or workspace
// failure), not that the tests failed.
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
	if remote {
		if err := m.push(ctx, ws); err != nil {
			return GradeResult{}, fmt.Errorf("%s: %w", ex.ID(), err)
		}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultGradeTimeout
	}
	start := time.Now()
	code, out, err := runCommand(ctx, sb, cmd, ws.Rel, timeout)
	elapsed := time.Since(start)
	if err != nil {
		return GradeResult{}, fmt.Errorf("%s: running the tests: %w", ex.ID(), err)
	}
	res := GradeResult{
		Command:  cmd,
		ExitCode: code,
		TimedOut: code == -1 && elapsed >= timeout-time.Second,
		Output:   out,
		Seconds:  elapsed.Seconds(),
		Restored: restored,
	}
	res.Passed = code == 0 && succeeded(ex.Lang, out)
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
	lib := []string{path.Join(libs, "junit-platform-console-standalone.jar"), path.Join(libs, "assertj-core.jar")}
	for _, j := range extra {
		lib = append(lib, path.Join(libs, j))
	}
	const out = "build/goalbox"
	jvm := "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
	return "rm -rf " + out + " && mkdir -p " + out + " && " +
		"javac -J" + strings.ReplaceAll(jvm, " ", " -J") + " -nowarn -encoding UTF-8 -d " + out + " -cp " + shellQuote(strings.Join(lib, ":")) +
		" $(find src/main/java src/test/java -name '*.java') && " +
		"java " + jvm + " -jar " + shellQuote(lib[0]) + " -cp " + shellQuote(strings.Join(lib[1:], ":")+":"+out) +
		" --scan-classpath " + out + " --disable-banner --details=tree --fail-if-no-tests"
}

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

// succeeded says whether out carries the test runner's success summary and no failure summary.
func succeeded(lang, out string) bool {
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
