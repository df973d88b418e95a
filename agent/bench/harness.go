package bench

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// The harness is what the grader adds to an exercise for one grade, so that the verdict does not rest on anything
// the solution can print or rewrite. The solution runs inside the test process, so every line of that process's
// output is the solution's to write, and every file it can name is the solution's to rewrite once the framework
// is done with it. The grade's first process is therefore the collector (harness/collector.py, record.go), which
// the solution never runs in: the framework's per-test results reach it over a pipe (descriptor 3) as each test
// ends, and an end line with the grade's nonce follows the framework's run; what arrives after that end counts for
// nothing and makes the grade suspect.
//
// The nonce reaches the test process without ever being in the workspace, a command line or the environment:
// the collector reads it from its standard input and writes it into a fresh private folder, $GOALBOX_DIR (mode
// 0700). Where the framework loads grader code before any solution code (pytest's conftest, a jest reporter, a
// JUnit launcher of the grader's own), that code takes the nonce and removes the file first. Where the solution's
// code can run first (Go package initialisation, Rust and C++ static constructors) it could read the file; what a
// solution may use at all is checked on its source before the run (allow.go, suspect.go).
//
// After the test process has ended, the collector runs the trailer: the report files (only compared with the
// pipe), the checksums of the files the run must not change; then it removes $GOALBOX_DIR and the grader's files,
// and prints its signed record (trailer.go, record.go).

//go:embed harness
var harnessFS embed.FS

// harnessDir is where the grader's own sources go in the exercise folder (the jest reporter, the Java launcher):
// a dot folder, which go ./..., pytest's collection and jest's ./* all pass over. The test process only reads it.
const harnessDir = ".goalbox"

// harness is one grade's additions: files to write into the exercise (relative to it), the test command that
// makes the framework report per test, and where the results come back from.
type harness struct {
	files   map[string][]byte
	command string // the test command alone, run from the exercise folder with $GOALBOX_DIR set
	// reports are the files in $GOALBOX_DIR the trailer sends back (the framework's reports, the epilogues).
	reports []string
	// ends is how many end lines the pipe must carry, one per test process the grade must see finish (Rust: one
	// per test file), each with the nonce.
	ends int
	// checked are the files the run must leave as the harness wrote them: the tests and the grader's own.
	checked map[string][]byte
	// pristine holds, for each harness file that stands in for an exercise file (Rust's test file with the
	// epilogue, C++'s test main), the exercise's own content, which the collect step puts back.
	pristine map[string][]byte
}

// newNonce is 128 random bits in hex: one grade's secret.
func newNonce() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform has no entropy: nothing can be graded safely
	}
	return hex.EncodeToString(b)
}

// harnessFor builds the harness of one grade of ex, whose plain test command is cmd (what the model is shown).
func (g *Grader) harnessFor(ex Exercise, cmd string) (harness, error) {
	h := harness{files: map[string][]byte{}, checked: map[string][]byte{}, pristine: map[string][]byte{}}
	for _, f := range ex.Test {
		data, _, err := sourceContent(ex, f)
		if err != nil {
			return harness{}, fmt.Errorf("%s: reading %s: %w", ex.ID(), f, err)
		}
		h.checked[f] = data
	}
	h.files[harnessDir+"/collector.py"] = mustHarnessFile("collector.py")
	h.ends = 1
	switch ex.Lang {
	case "go":
		pkg, err := goTestPackage(ex)
		if err != nil {
			return harness{}, err
		}
		var b bytes.Buffer
		tmpl := template.Must(template.ParseFS(harnessFS, "harness/goalbox_main_test.go.tmpl"))
		if err := tmpl.Execute(&b, struct{ Package string }{pkg}); err != nil {
			return harness{}, err
		}
		h.files[goMainFile] = b.Bytes()
		// go test -json: cmd/go's own stream of per-test events, straight into the collector's pipe (and only
		// cmd/go holds it: the test binary it starts does not inherit descriptor 3); the human output is rendered
		// from it. -count=1: a result go test replays from its cache runs no TestMain, so it would carry no
		// epilogue (and the build cache is shared between the grader's sandboxes).
		plain := strings.Replace(cmd, " go test -v ./...", " go test -count=1 -json ./...", 1)
		if plain == cmd {
			return harness{}, fmt.Errorf("%s: unexpected go test command %q", ex.ID(), cmd)
		}
		h.command = plain + ` >&3 3>&-`
	case "python":
		h.files["conftest.py"] = mustHarnessFile("conftest.py")
		h.command = cmd + ` --junitxml="$GOALBOX_DIR/report.xml" -o junit_family=xunit1`
		h.reports = []string{"report.xml"}
	case "javascript":
		h.files[harnessDir+"/reporter.js"] = mustHarnessFile("reporter.js")
		plain := strings.Replace(cmd, " --ci ./*", " --ci --reporters=default --reporters=./"+harnessDir+"/reporter.js --json --outputFile=\"$GOALBOX_DIR/report.json\" ./*", 1)
		if plain == cmd {
			return harness{}, fmt.Errorf("%s: unexpected jest command %q", ex.ID(), cmd)
		}
		h.command = plain
		h.reports = []string{"report.json"}
	case "rust":
		// libtest logs each test's result to the collector's pipe as it ends (--logfile); each pristine test file
		// gets the epilogue test, and one test thread runs the tests in name order, the epilogue last.
		epilogue := mustHarnessFile("epilogue.rs")
		h.ends = 0
		for _, f := range ex.Test {
			if !strings.HasPrefix(f, "tests/") || path.Ext(f) != ".rs" {
				continue
			}
			h.pristine[f] = h.checked[f]
			h.files[f] = append(slices.Clip(h.checked[f]), epilogue...)
			h.checked[f] = h.files[f]
			h.ends++
		}
		if h.ends == 0 {
			return harness{}, fmt.Errorf("%s: no test file under tests/ to add the epilogue to", ex.ID())
		}
		h.command = cmd + " --test-threads=1 --logfile /dev/fd/3"
	case "cpp":
		own, _, err := sourceContent(ex, cppMainFile)
		if err != nil {
			return harness{}, fmt.Errorf("%s: the C++ exercise has no %s: %w", ex.ID(), cppMainFile, err)
		}
		h.pristine[cppMainFile] = own
		h.files[cppMainFile] = mustHarnessFile("tests-main.cpp")
		h.command = cmd
		h.reports = []string{"report.txt"}
	case "java":
		h.files[harnessDir+"/GoalboxLauncher.java"] = mustHarnessFile("GoalboxLauncher.java")
		jars, _, err := javaJars(ex)
		if err != nil {
			return harness{}, err
		}
		h.command = javaHarnessCommand(g.Toolchains.JavaLibs, jars)
		h.reports = []string{"report.txt"}
	default:
		return harness{}, fmt.Errorf("unknown language %q", ex.Lang)
	}
	maps.Copy(h.checked, h.files)
	return h, nil
}

// Harness files that stand where the exercise has, or could have, a file of its own.
const (
	goMainFile  = "goalbox_main_test.go"
	cppMainFile = "test/tests-main.cpp"
)

func mustHarnessFile(name string) []byte {
	data, err := harnessFS.ReadFile("harness/" + name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return data
}

// goTestPackage is the package clause of ex's first Go test file: the grader's TestMain joins that package.
func goTestPackage(ex Exercise) (string, error) {
	for _, f := range ex.Test {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(ex.Dir, filepath.FromSlash(f)), nil, parser.PackageClauseOnly)
		if err != nil {
			return "", fmt.Errorf("%s: reading the package of %s: %w", ex.ID(), f, err)
		}
		return file.Name.Name, nil
	}
	return "", fmt.Errorf("%s: no _test.go among the test files", ex.ID())
}

// javaHarnessCommand is javaCommand with the grader's launcher compiled in the same javac run and run in place of
// the console launcher: the same class path, the same JVM flags. Attaching an agent to the JVM at run time is
// turned off, so a solution cannot load one to read the launcher's locals.
func javaHarnessCommand(libs string, extra []string) string {
	lib, compile := javaCompile(libs, extra, " "+harnessDir+"/GoalboxLauncher.java")
	return compile + "java " + javaFlags + " -XX:+DisableAttachMechanism -cp " + shellQuote(strings.Join(lib, ":")+":"+javaOut) + " GoalboxLauncher " + javaOut
}

// writeHarness writes h's files into ws after Restore, each as a fresh regular file (writeInto), and returns them
// as sandbox paths.
func writeHarness(ws Workspace, h harness) error {
	r, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return err
	}
	defer r.Close()
	for _, f := range sortedKeys(h.files) {
		if err := writeInto(r, f, h.files[f], 0o644); err != nil {
			return fmt.Errorf("writing the grader's %s: %w", f, err)
		}
	}
	return nil
}
