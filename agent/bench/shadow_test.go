package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// TestGraderOwnedFilesCannotBeShadowed plants, beside a stub, files that would replace or skip the grader's own
// (a conftest.py, a pytest.ini, a jest.config.js, a build.rs, a TestMain of the solution's, a changed CMakeLists.txt,
// a Cargo.toml that points the test target elsewhere, a class named like the grader's launcher), each written to make
// the stub pass if it took effect. None may pass: Restore removes or restores the file, or the grade is suspect.
func TestGraderOwnedFilesCannotBeShadowed(t *testing.T) {
	for _, c := range []struct {
		id    string
		files map[string]string
		// removed: the planted path Restore must report; empty when the defence is a suspect verdict instead.
		removed string
	}{
		{"python/proverb", map[string]string{
			"conftest.py": "def pytest_collection_modifyitems(items):\n    items.clear()\n",
			"pytest.ini":  "[pytest]\naddopts = -p no:junitxml\n",
		}, "conftest.py"},
		{"javascript/tournament", map[string]string{
			"jest.config.js": "module.exports = { testMatch: ['**/nothing-matches'], passWithNoTests: true, reporters: [] };\n",
		}, "jest.config.js"},
		{"go/alphametics", map[string]string{
			"zz_test.go": "package alphametics\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n",
		}, "zz_test.go"},
		{"go/two-bucket", map[string]string{
			"helper.go": "package twobucket\n\nimport \"os\"\n\nfunc init() { os.Exit(0) }\n",
		}, ""},
		{"rust/acronym", map[string]string{
			"build.rs":   "fn main() { std::process::exit(0) }\n",
			"Cargo.toml": "[package]\nname = \"acronym\"\nversion = \"1.0.0\"\nedition = \"2021\"\n\n[[test]]\nname = \"acronym\"\npath = \"src/lib.rs\"\n",
		}, "build.rs"},
		{"cpp/diamond", map[string]string{
			"CMakeLists.txt": "cmake_minimum_required(VERSION 3.5.1)\nproject(diamond CXX)\nadd_custom_target(ok ALL COMMAND echo 'All tests passed (1 assertion in 1 test case)')\n",
		}, "CMakeLists.txt"},
		{"java/connect", map[string]string{
			"src/main/java/GoalboxLauncher.java": "public final class GoalboxLauncher { public static void main(String[] a) { System.out.println(\"[ 10 tests successful ]\"); } }\n",
		}, ""},
	} {
		t.Run(c.id, func(t *testing.T) {
			lang, slug, _ := strings.Cut(c.id, "/")
			ex := oneExercise(t, lang, slug)
			ws, err := Prepare(ex, t.TempDir())
			must(t, err)
			for f, content := range c.files {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws.Dir(), f)), 0o755))
				must(t, os.WriteFile(filepath.Join(ws.Dir(), f), []byte(content), 0o644))
			}
			g := NewGrader()
			g.Toolchains.CompilerCache = true
			res, err := g.Grade(t.Context(), localSandbox{root: ws.Root}, ex, ws)
			must(t, err)
			if res.Ungradable != "" {
				ciskip.Skipf(t, "%s cannot be graded here: %s", ex.ID(), res.Ungradable)
			}
			if res.Passed {
				t.Errorf("the stub passed with %v planted:\n%s", c.files, tail(res.Output, 2000))
			}
			if c.removed != "" && !slices.Contains(res.Restored, ws.Rel+"/"+c.removed) {
				t.Errorf("%s was not removed or restored before the grade: restored %v", c.removed, res.Restored)
			}
			if c.removed == "" && res.Suspect == "" {
				t.Errorf("want a suspect verdict; verdict %q", res.Verdict)
			}
			t.Logf("restored %v; suspect %q; verdict %q", res.Restored, res.Suspect, res.Verdict)
		})
	}
}
