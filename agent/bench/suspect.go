package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A solution's code runs inside the test process, and there it can do whatever the framework can. The harness
// makes a run that ends early or that forges the framework's lines fail; these checks name what a solution has no
// honest use for, so that such a grade is recorded as suspect (never passed) with the reason, whatever the run
// says. They read the files the solution side wrote: the solution files and anything else the model added that
// the build would load. A determined solution can hide a call from a text search (a name built at run time); the
// harness is what stops that one.

// suspectPattern is one thing a solution has no honest use for, and what it means.
type suspectPattern struct {
	re  *regexp.Regexp
	why string
}

func sp(re, why string) suspectPattern { return suspectPattern{regexp.MustCompile(re), why} }

// grader is what every language shares: the grader's own folder and files are none of a solution's business.
var graderPatterns = []suspectPattern{
	sp(`\.goalbox\b|GoalboxLauncher|goalbox_main_test|zzzz_goalbox`, "refers to the grader's own files"),
}

var suspectPatterns = map[string][]suspectPattern{
	"go": {
		sp(`\bos\.Exit\s*\(|\bsyscall\.(Exit|Kill|Syscall|RawSyscall)\b|\bunix\.(Exit|Kill)\b|\bruntime\.Goexit\b`, "calls the process's exit"),
		sp(`//go:linkname\b`, "links to runtime internals (//go:linkname)"),
		sp(`\bTestMain\b|(?m)^\s*(import\s+)?(\w+\s+)?"testing"\s*$`, "uses the testing framework from solution code"),
	},
	"python": {
		// exit() and quit() are the site module's builtins; a method or function of the solution's named exit
		// (def exit(self)) does not match.
		sp(`\bos\._exit\b|\bsys\.exit\b|\bSystemExit\b|\bos\.(kill|killpg|abort)\b|(^|[^.\w])(exit|quit)\s*\(\s*\d*\s*\)`, "calls the process's exit"),
		sp(`\bunittest\b|\bpytest\b|\b_pytest\b`, "touches the test framework (unittest, pytest) from solution code"),
	},
	"javascript": {
		sp(`\bprocess\s*(\.\s*(exit|kill|abort|reallyExit)\b|\[)`, "calls the process's exit"),
		sp(`\b(globalThis|global)\s*\.\s*(expect|test|it|describe|jest)\b|\bexpect\s*\.\s*extend\b|require\(\s*['"](jest|@jest/|expect)`, "patches the test framework (jest, expect)"),
	},
	"rust": {
		sp(`\bprocess::(exit|abort)\b|\blibc::(_exit|exit|kill|abort)\b`, "calls the process's exit"),
		sp(`\blink_section\b|\.init_array|\.ctors\b|#\[used\]`, "places code in the startup sections (.init_array)"),
		// In Cargo.toml, a solution file in most Rust exercises: what would swap or skip the pristine test targets
		// or run code at build time.
		sp(`(?m)^\s*(build|autotests|harness|links|rustflags|rustc-wrapper)\s*=|\[\[(test|bin|bench|example)\]\]|\[(patch|replace|profile|target)\b`, "changes the build's targets or tools in Cargo.toml"),
	},
	"cpp": {
		sp(`(^|[^\w.>])(std::)?(exit|_exit|_Exit|quick_exit|abort)\s*\(`, "calls the process's exit"),
		sp(`__attribute__\s*\(\(\s*(constructor|destructor)|\.init_array`, "runs code at load (a constructor attribute)"),
		sp(`\bCatch::|\bCATCH_|catch\.hpp`, "touches the test framework (Catch) from solution code"),
	},
	"java": {
		sp(`\bSystem\s*\.\s*exit\b|\bRuntime\s*\.\s*getRuntime\s*\(\s*\)\s*\.\s*(exit|halt)\b`, "calls the process's exit"),
		sp(`\borg\.junit\b|\borg\.assertj\b`, "touches the test framework (JUnit, AssertJ) from solution code"),
	},
}

// sourceExts are the files of each language the build or the test run would load.
var sourceExts = map[string][]string{
	"go":         {".go", ".s"},
	"python":     {".py", ".pth"},
	"javascript": {".js", ".mjs", ".cjs", ".json"},
	"rust":       {".rs", ".toml"},
	"cpp":        {".h", ".hpp", ".cpp", ".cc", ".cxx", ".c", ".ipp", ".inl"},
	"java":       {".java"},
}

// suspectSource scans the solution side of ws after Restore: the solution files and any file the model added
// that the language loads, not the pristine files Restore just put back. It returns the first finding as
// "file: why (matched text)", or "".
func suspectSource(ex Exercise, ws Workspace) (string, error) {
	pristine, err := sourceFiles(ex)
	if err != nil {
		return "", err
	}
	allowed, err := exerciseAllowance(ex)
	if err != nil {
		return "", err
	}
	own := func(p string) bool {
		if slices.Contains(pristine, p) && !slices.Contains(ex.Solution, p) {
			return false // a test or build file is not the solution's to import
		}
		info, err := os.Lstat(filepath.Join(ws.Dir(), filepath.FromSlash(p)))
		return err == nil && info.Mode().IsRegular()
	}
	var found string
	err = fs.WalkDir(os.DirFS(ws.Dir()), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == harnessDir || d.Name() == "node_modules" || d.Name() == "build" || d.Name() == "target") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (slices.Contains(pristine, p) && !slices.Contains(ex.Solution, p)) {
			return nil
		}
		ext := path.Ext(p)
		if !slices.Contains(sourceExts[ex.Lang], ext) {
			return nil
		}
		if ex.Lang == "go" && ext == ".s" {
			found = p + ": assembly in the package (code the grader cannot read as Go)"
			return nil
		}
		if ex.Lang == "javascript" && ext == ".json" && !slices.Contains(ex.Solution, p) {
			return nil // data a solution may read; jest loads no added .json of its own accord
		}
		data, err := os.ReadFile(filepath.Join(ws.Dir(), filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		for _, pat := range append(slices.Clip(graderPatterns), suspectPatterns[ex.Lang]...) {
			if m := pat.re.FindIndex(data); m != nil {
				found = fmt.Sprintf("%s:%d: %s (%q)", p, lineAt(data, m[0]), pat.why, strings.TrimSpace(string(data[m[0]:m[1]])))
				return nil
			}
		}
		if ex.Lang != "rust" || path.Ext(p) == ".rs" {
			found = reachPast(ex, allowed, p, data, own)
		}
		return nil
	})
	return found, err
}
