package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// hiddenDirs hold reference solutions and write-ups; the model never sees them.
var hiddenDirs = []string{".meta", ".approaches", ".articles"}

// Workspace is an exercise's copy in a run folder. Root is the folder a sandbox serves; the exercise itself is in
// Root/Rel, a folder named after the slug, because some build files (the C++ CMakeLists) take the exercise's name
// from their folder's name, and a container sees Root under a fixed name such as /workspace.
type Workspace struct {
	Root string // host path of the sandbox workspace
	Rel  string // exercise folder relative to Root, "/"-separated (the slug)
}

// Dir is the exercise folder's host path.
func (w Workspace) Dir() string { return filepath.Join(w.Root, filepath.FromSlash(w.Rel)) }

// Files returns the exercise's listed files as sandbox paths (relative to Root).
func (w Workspace) Files(list []string) []string {
	out := make([]string, len(list))
	for i, f := range list {
		out[i] = path.Join(w.Rel, f)
	}
	return out
}

// WorkspaceRoot is where Prepare puts ex inside runDir: runDir/work/<lang>/<slug>.
func WorkspaceRoot(runDir string, ex Exercise) string {
	return filepath.Join(runDir, "work", ex.Lang, ex.Slug)
}

// Prepare copies ex fresh into runDir (anything left there from an earlier run is removed first), leaving out the
// folders that hold reference solutions, with every test active (see activeContent). The source is only read.
func Prepare(ex Exercise, runDir string) (Workspace, error) {
	root := WorkspaceRoot(runDir, ex)
	if err := checkApart(ex.Dir, root); err != nil {
		return Workspace{}, err
	}
	if err := os.RemoveAll(root); err != nil {
		return Workspace{}, fmt.Errorf("%s: clearing the old workspace: %w", ex.ID(), err)
	}
	ws := Workspace{Root: root, Rel: ex.Slug}
	if err := os.MkdirAll(ws.Dir(), 0o755); err != nil {
		return Workspace{}, fmt.Errorf("%s: making the workspace: %w", ex.ID(), err)
	}
	r, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return Workspace{}, err
	}
	defer r.Close()
	files, err := sourceFiles(ex)
	if err != nil {
		return Workspace{}, err
	}
	for _, f := range files {
		if err := copyInto(r, ex, f); err != nil {
			return Workspace{}, fmt.Errorf("%s: copying %s: %w", ex.ID(), f, err)
		}
	}
	return ws, nil
}

// checkApart refuses a run folder inside the benchmark source or the other way round, so that neither copying nor
// clearing can touch the source.
func checkApart(src, dst string) error {
	a, err1 := filepath.Abs(src)
	b, err2 := filepath.Abs(dst)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if a == b || strings.HasPrefix(b, a+string(filepath.Separator)) || strings.HasPrefix(a, b+string(filepath.Separator)) {
		return errors.New("the run folder must be outside the benchmark folder (and not contain it)")
	}
	return nil
}

// sourceFiles lists the regular files of ex (relative, "/"-separated), skipping hiddenDirs at any depth.
// Symlinks in the source are not followed or copied.
func sourceFiles(ex Exercise) ([]string, error) {
	var out []string
	err := filepath.WalkDir(ex.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains(hiddenDirs, d.Name()) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(ex.Dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: listing the exercise: %w", ex.ID(), err)
	}
	return out, nil
}

// copyInto copies srcDir/rel to rel inside r, replacing whatever is there (a file, a symlink, a folder) and
// turning any parent that is not a real folder into one, so a planted symlink cannot redirect the write.
// Files get mode 0644, or 0755 when the source is executable (gradlew).
func copyInto(r *os.Root, ex Exercise, rel string) error {
	data, mode, err := sourceContent(ex, rel)
	if err != nil {
		return err
	}
	return writeInto(r, rel, data, mode)
}

// sourceContent is what rel of ex looks like in a workspace: the source bytes with every test active, and the
// file mode to give it.
func sourceContent(ex Exercise, rel string) ([]byte, os.FileMode, error) {
	p := filepath.Join(ex.Dir, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, 0, err
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, 0, err
	}
	mode := os.FileMode(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if slices.Contains(ex.Test, rel) {
		data = activeContent(ex.Lang, data)
	}
	return data, mode, nil
}

// writeInto writes data to rel inside r as a new regular file, as copyInto describes.
func writeInto(r *os.Root, rel string, data []byte, mode os.FileMode) error {
	if err := realDirs(r, path.Dir(rel)); err != nil {
		return err
	}
	if err := r.RemoveAll(rel); err != nil {
		return err
	}
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// realDirs makes every component of dir a real folder inside r, removing a file or symlink in the way.
func realDirs(r *os.Root, dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		info, err := r.Lstat(cur)
		switch {
		case err == nil && info.IsDir():
			continue
		case err == nil:
			if err := r.RemoveAll(cur); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := r.Mkdir(cur, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Restore puts back every file of the exercise that is not a solution file, exactly as in the source, removes
// files the model added that the language's test runner would pick up (extra tests, runner configuration,
// bytecode caches) and runner configuration beside the exercise folder (see rootConfigs), with all tests active. Grading after Restore judges only the solution files: a model that
// edited or added tests cannot pass that way. It returns the sandbox-relative paths it changed or removed.
func Restore(ex Exercise, ws Workspace) ([]string, error) {
	r, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return nil, fmt.Errorf("%s: opening the workspace: %w", ex.ID(), err)
	}
	defer r.Close()
	files, err := sourceFiles(ex)
	if err != nil {
		return nil, err
	}
	if err := cleanRoot(ws); err != nil {
		return nil, err
	}
	removed, err := removeIntruders(r, ex, files)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, f := range removed {
		changed = append(changed, path.Join(ws.Rel, f))
	}
	for _, f := range files {
		if slices.Contains(ex.Solution, f) {
			continue
		}
		want, mode, err := sourceContent(ex, f)
		if err != nil {
			return nil, err
		}
		if info, err := r.Lstat(f); err == nil && info.Mode().IsRegular() && info.Mode().Perm() == mode {
			if got, err := r.ReadFile(f); err == nil && bytes.Equal(got, want) {
				continue
			}
		}
		if err := writeInto(r, f, want, mode); err != nil {
			return nil, fmt.Errorf("%s: restoring %s: %w", ex.ID(), f, err)
		}
		changed = append(changed, path.Join(ws.Rel, f))
	}
	return changed, nil
}

// removeIntruders deletes files and folders that are not in the source, not solution files, and that the
// language's test runner would load: a conftest.py could mark every test passed, an extra *_test.go could exit 0
// from TestMain, a node_modules could hold a fake jest. Other files the model added (helpers) stay.
func removeIntruders(r *os.Root, ex Exercise, source []string) ([]string, error) {
	var removed []string
	err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if slices.Contains(source, p) || slices.Contains(ex.Solution, p) {
			return nil
		}
		if !intruder(ex.Lang, p, d) || (d.IsDir() && holdsAny(p, source)) {
			return nil
		}
		if err := r.RemoveAll(p); err != nil {
			return err
		}
		removed = append(removed, p)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: cleaning the workspace: %w", ex.ID(), err)
	}
	return removed, nil
}

// intruder says whether an added path p (relative to the exercise) is something the test runner would load.
func intruder(lang, p string, d fs.DirEntry) bool {
	name := d.Name()
	if d.IsDir() && slices.Contains(hiddenDirs, name) {
		return false // nothing reads these
	}
	if p == harnessDir || strings.HasPrefix(p, harnessDir+"/") {
		return true // the grader's own folder: only the grader puts anything there
	}
	switch lang {
	case "python":
		if d.IsDir() {
			return name == "__pycache__" || name == ".pytest_cache"
		}
		return slices.Contains([]string{"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py", "usercustomize.py", ".python-version"}, name) ||
			strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") ||
			strings.HasSuffix(name, ".pth") || strings.HasSuffix(name, ".pyc")
	case "go":
		return !d.IsDir() && (strings.HasSuffix(name, "_test.go") || name == "go.work" || name == "go.work.sum")
	case "javascript":
		if d.IsDir() {
			return name == "node_modules" || name == "__mocks__" || name == "__tests__"
		}
		return strings.HasSuffix(name, ".spec.js") || strings.HasSuffix(name, ".test.js") ||
			strings.HasPrefix(name, "jest.config") || strings.HasPrefix(name, ".babelrc") || strings.HasPrefix(name, "babel.config") ||
			name == "node_modules" // a symlink counts too
	case "java":
		return p == "src/test" || strings.HasPrefix(p, "src/test/")
	case "rust":
		return p == "tests" || strings.HasPrefix(p, "tests/") || p == "build.rs" || p == ".cargo" || p == "target" ||
			p == "rust-toolchain" || p == "rust-toolchain.toml"
	case "cpp":
		return p == "test" || strings.HasPrefix(p, "test/") || p == "build"
	}
	return false
}

// holdsAny says whether folder dir holds any of files.
func holdsAny(dir string, files []string) bool {
	return slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, dir+"/") })
}

var (
	jsSkipped    = regexp.MustCompile(`\bx(test|it)\(`)
	javaDisabled = regexp.MustCompile(`(?m)^[ \t]*@Disabled(\([^)]*\))?[ \t]*\r?\n`)
)

// activeContent turns on the tests a track ships disabled, as Aider's harness does: JavaScript's xtest/xit become
// test/it, Java's @Disabled lines go. (C++ turns them on with a CMake flag and Rust with --include-ignored.)
func activeContent(lang string, data []byte) []byte {
	switch lang {
	case "javascript":
		return jsSkipped.ReplaceAll(data, []byte("$1("))
	case "java":
		return javaDisabled.ReplaceAll(data, nil)
	}
	return data
}

// rootConfigs are files that test runners look for in parent folders (go.work, conftest.py, a Cargo workspace,
// .cargo/config.toml with a rustc wrapper, pyenv's .python-version...). The workspace root is the exercise
// folder's parent, so cleanRoot removes them there.
var rootConfigs = []string{
	"go.work", "go.work.sum",
	"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", ".python-version",
	"package.json", "node_modules", ".npmrc", ".babelrc", ".babelrc.js", ".babelrc.json", "babel.config.js", "babel.config.json",
	"jest.config.js", "jest.config.json", "jest.config.ts", "jest.config.mjs", "jest.config.cjs",
	"Cargo.toml", "Cargo.lock", ".cargo", "rust-toolchain", "rust-toolchain.toml",
	"CMakeLists.txt",
}

// cleanRoot removes rootConfigs from the workspace root, beside the exercise folder.
func cleanRoot(ws Workspace) error {
	r, err := os.OpenRoot(ws.Root)
	if err != nil {
		return fmt.Errorf("opening the workspace root: %w", err)
	}
	defer r.Close()
	for _, name := range rootConfigs {
		if name == ws.Rel {
			continue
		}
		if err := r.RemoveAll(name); err != nil {
			return fmt.Errorf("cleaning the workspace root: %w", err)
		}
	}
	return nil
}
