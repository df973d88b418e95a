package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

func TestCaretMatch(t *testing.T) {
	for _, c := range []struct {
		req, v string
		want   bool
	}{
		{"0.3", "0.3.9", true}, {"0.3", "0.4.0", false}, {"0.4.4", "0.4.3", false}, {"0.4.4", "0.4.5", true},
		{"1.0", "1.0.69", true}, {"1.0", "2.0.0", false}, {"1", "1.9.0", true}, {"0.5", "0.10.3", false},
		{"0.8", "0.8.5", true}, {"^0.2", "0.2.4", true}, {"0.0.3", "0.0.4", false}, {"0.0.3", "0.0.3", true},
		{"x", "1.0.0", false},
	} {
		if got := caretMatch(c.req, c.v); got != c.want {
			t.Errorf("caretMatch(%q, %q) = %v, want %v", c.req, c.v, got, c.want)
		}
	}
	reg := []string{"time-0.3.9", "itertools-0.10.3", "rand-0.8.5", "rand_core-0.6.4"}
	got := missingCrates("[package]\nname=\"x\"\n[dependencies]\ntime = \"0.3\"\nitertools = \"0.5\"\nrand = { version = \"0.8\", features = [\"small_rng\"] }\n[dev-dependencies]\nregex = \"1\"\n", reg)
	want := []string{"itertools 0.5 (offline registry has 0.10.3)", "regex 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("missingCrates = %q, want %q", got, want)
	}
}

func TestReferenceTargets(t *testing.T) {
	for _, c := range []struct {
		lang, slug string
		want       map[string]string
	}{
		{"java", "bowling", map[string]string{
			".meta/src/reference/java/BowlingGame.java": "src/main/java/BowlingGame.java",
			".meta/src/reference/java/Frame.java":       "src/main/java/Frame.java"}},
		{"cpp", "binary-search-tree", map[string]string{".meta/example.h": "binary_search_tree.h"}},
		{"cpp", "allergies", map[string]string{".meta/example.h": "allergies.h", ".meta/example.cpp": "allergies.cpp"}},
		{"rust", "alphametics", map[string]string{".meta/example.rs": "src/lib.rs", ".meta/Cargo-example.toml": "Cargo.toml"}},
		{"javascript", "grep", map[string]string{".meta/proof.ci.js": "grep.js"}},
	} {
		got, err := referenceTargets(oneExercise(t, c.lang, c.slug))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s/%s: %v, want %v", c.lang, c.slug, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s/%s: %s goes to %q, want %q", c.lang, c.slug, k, got[k], v)
			}
		}
	}
}

// gradeWith prepares ex, lets edit change the workspace as a model would, and grades it on the local sandbox.
func gradeWith(t *testing.T, ex Exercise, edit func(dir string)) GradeResult {
	t.Helper()
	ws, err := Prepare(ex, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := PlaceReference(ex, ws); err != nil {
		t.Fatal(err)
	}
	edit(ws.Dir())
	res, err := NewGrader().Grade(context.Background(), localSandbox{root: ws.Root}, ex, ws)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ungradable != "" {
		ciskip.Skipf(t, "%s cannot be graded here: %s", ex.ID(), res.Ungradable)
	}
	return res
}

func TestGradeIgnoresEditedTests(t *testing.T) {
	// A wrong solution plus tests rewritten to pass it: Restore puts the tests back, so it fails.
	py := oneExercise(t, "python", "two-bucket")
	res := gradeWith(t, py, func(dir string) {
		must(t, os.WriteFile(filepath.Join(dir, py.Solution[0]), []byte("def measure(*a):\n    return None\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, py.Test[0]), []byte("def test_ok():\n    assert True\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "conftest.py"), []byte("def pytest_collection_modifyitems(items):\n    items.clear()\n"), 0o644))
	})
	if res.Passed {
		t.Errorf("python: a wrong solution with edited tests passed:\n%s", res.Output)
	}
	if !strings.Contains(strings.Join(res.Restored, " "), py.Test[0]) {
		t.Errorf("python: restored %v", res.Restored)
	}

	goEx := oneExercise(t, "go", "two-bucket")
	res = gradeWith(t, goEx, func(dir string) {
		must(t, os.WriteFile(filepath.Join(dir, goEx.Solution[0]), []byte("package twobucket\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, goEx.Test[0]), []byte("package twobucket\nimport \"testing\"\nfunc TestOK(t *testing.T) {}\n"), 0o644))
	})
	if res.Passed {
		t.Errorf("go: a wrong solution with edited tests passed:\n%s", res.Output)
	}
}

func TestGradeNeedsTheRunnersSummary(t *testing.T) {
	// A solution that ends the process with status 0 while the tests load must not pass on the exit code alone.
	py := oneExercise(t, "python", "two-bucket")
	res := gradeWith(t, py, func(dir string) {
		must(t, os.WriteFile(filepath.Join(dir, py.Solution[0]), []byte("import os\nos._exit(0)\n"), 0o644))
	})
	if res.ExitCode != 0 || res.Passed {
		t.Errorf("python: exit %d passed %v, want exit 0 and not passed:\n%s", res.ExitCode, res.Passed, res.Output)
	}
	goEx := oneExercise(t, "go", "two-bucket")
	res = gradeWith(t, goEx, func(dir string) {
		// A helper file beside the reference solution, as a model may add.
		must(t, os.WriteFile(filepath.Join(dir, "exit.go"), []byte("package twobucket\n\nimport \"os\"\n\nfunc init() { os.Exit(0) }\n"), 0o644))
	})
	if res.ExitCode != 0 || res.Passed {
		t.Errorf("go: exit %d passed %v, want exit 0 and not passed:\n%s", res.ExitCode, res.Passed, res.Output)
	}
}

func TestGradeTimesOut(t *testing.T) {
	py := oneExercise(t, "python", "two-bucket")
	ws, err := Prepare(py, t.TempDir())
	must(t, err)
	must(t, os.WriteFile(filepath.Join(ws.Dir(), py.Solution[0]), []byte("while True:\n    pass\n"), 0o644))
	g := NewGrader()
	g.Timeout = 2e9
	res, err := g.Grade(context.Background(), localSandbox{root: ws.Root}, py, ws)
	must(t, err)
	if res.Ungradable != "" {
		ciskip.Skip(t, res.Ungradable)
	}
	if res.Passed || !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("endless solution: %+v", res)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGradeRustEarlyExit(t *testing.T) {
	// A Rust solution that ends the test binary with status 0: cargo's exit code is 0, but the binary never
	// reports its result, so the grade fails.
	ex := oneExercise(t, "rust", "acronym")
	res := gradeWith(t, ex, func(dir string) {
		must(t, os.WriteFile(filepath.Join(dir, "src/lib.rs"), []byte("pub fn abbreviate(_phrase: &str) -> String {\n    std::process::exit(0)\n}\n"), 0o644))
	})
	if res.ExitCode != 0 || res.Passed {
		t.Errorf("exit %d passed %v, want exit 0 and not passed:\n%s", res.ExitCode, res.Passed, res.Output)
	}
}

func TestJavaOfflineLimits(t *testing.T) {
	ctx := context.Background()
	g := NewGrader()
	if tc, err := g.probe(ctx, localSandbox{root: t.TempDir()}, "java"); err != nil || tc.missing != "" {
		ciskip.Skipf(t, "java cannot be graded here: %s %v", tc.missing, err)
	}
	for slug, want := range map[string]string{"hangman": "io.reactivex.rxjava2:rxjava", "rest-api": "org.json:json"} {
		ex := oneExercise(t, "java", slug)
		ws, err := Prepare(ex, t.TempDir())
		must(t, err)
		res, err := g.Grade(ctx, localSandbox{root: ws.Root}, ex, ws)
		must(t, err)
		if !strings.Contains(res.Ungradable, want) || res.Passed || res.Command != "" {
			t.Errorf("java/%s: %+v, want ungradable naming %s", slug, res, want)
		}
	}
	// mazy-mice's tests call AssertJ's hasDimensions (3.19+): with Debian's 3.14 the reference cannot compile,
	// which is reported as ungradable; with a newer AssertJ it must pass.
	ex := oneExercise(t, "java", "mazy-mice")
	ws, err := Prepare(ex, t.TempDir())
	must(t, err)
	must(t, PlaceReference(ex, ws))
	res, err := g.Grade(ctx, localSandbox{root: ws.Root}, ex, ws)
	must(t, err)
	if !res.Passed && !strings.Contains(res.Ungradable, "AssertJ") {
		t.Errorf("mazy-mice reference neither passed nor was ungradable: %q\n%s", res.Ungradable, tail(res.Output, 2000))
	}
	t.Logf("mazy-mice: passed %v, ungradable %q", res.Passed, res.Ungradable)
}

func TestGradeIgnoresAShadowedRunner(t *testing.T) {
	// A wrong solution plus a pytest.py beside it: `python3 -m pytest` would import that file instead of pytest,
	// and it prints a passing summary. The grader runs Python isolated (-I: no working folder on sys.path, no
	// user site, no PYTHON* variables), so the real pytest runs and fails the solution.
	py := oneExercise(t, "python", "two-bucket")
	res := gradeWith(t, py, func(dir string) {
		must(t, os.WriteFile(filepath.Join(dir, py.Solution[0]), []byte("def measure(*a):\n    return None\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "pytest.py"), []byte("print('1 passed in 0.01s')\nraise SystemExit(0)\n"), 0o644))
	})
	if res.Passed {
		t.Errorf("a pytest.py in the exercise made a wrong solution pass:\n%s", res.Output)
	}
}
