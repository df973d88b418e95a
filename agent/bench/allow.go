package bench

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a solution may use, checked on its source before it runs. Polyglot exercises are pure functions: a solution
// has no honest use for the process (its exit, its descriptors, its environment), the file system, other
// processes, or the test framework. Per language, a solution may import what the language's pure core offers
// (pureCore) and what its own exercise's reference solution and stub import (so grep may read files, paasio may
// use io, parallel-letter-frequency may start threads); and it may not write what reachOut names (the calls,
// names and constructs that reach past a pure function: a process's exit, syscall, atexit, Runtime, process,
// Function, unsafe...), unless its exercise's reference or stub writes it too. The lists are derived from the
// references (TestReferencesUseOnlyWhatIsAllowed and the selftest prove that every reference passes); a solution
// that reaches past them is suspect, with the file, the line and what it used.

// pureCore is, per language, the modules (Go packages, Python modules, Java packages, C++ headers) a solution of any
// exercise may import. Go, Python, Java: a module's own name or a package under it (java.util covers
// java.util.function); C++: the header's name.
var pureCore = map[string][]string{
	"go": {"bufio", "bytes", "cmp", "container/heap", "container/list", "container/ring", "errors", "fmt", "iter", "maps",
		"math", "math/big", "math/bits", "math/cmplx", "math/rand", "math/rand/v2", "regexp", "slices", "sort",
		"strconv", "strings", "sync", "time", "unicode", "unicode/utf16", "unicode/utf8"},
	"python": {"__future__", "abc", "array", "bisect", "calendar", "cmath", "collections", "copy", "dataclasses",
		"datetime", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "json", "math", "numbers",
		"operator", "random", "re", "statistics", "string", "textwrap", "typing", "unicodedata"},
	"javascript": {},
	"java":       {"java.util", "java.math", "java.text"},
	"cpp": {"algorithm", "any", "array", "bitset", "cassert", "cctype", "cfloat", "chrono", "climits", "cmath",
		"compare", "complex", "cstddef", "cstdint", "cstring", "deque", "exception", "forward_list", "functional",
		"initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream", "iterator", "limits", "list", "map",
		"memory", "numbers", "numeric", "optional", "ostream", "queue", "random", "ranges", "regex", "set", "span",
		"sstream", "stack", "stdexcept", "string", "string_view", "tuple", "type_traits", "unordered_map",
		"unordered_set", "utility", "variant", "vector"},
	// Rust has no import list: its reach is in reachOut (std's modules by name, unsafe, extern).
}

// reachOut is, per language, what reaches past a pure function. A pattern the exercise's reference or stub matches
// is allowed for that exercise.
var reachOut = map[string][]suspectPattern{
	"go": {
		sp(`//go:(linkname|embed)\b|(?m)^\s*#cgo\b`, "reaches past Go's pure core (a compiler directive)"),
	},
	"python": {
		sp(`\b(__import__|eval|exec|compile|open|globals|locals|vars|getattr|setattr|delattr|breakpoint|input|memoryview|help)\s*\(`, "reaches the interpreter (a builtin that imports, evaluates, opens or reflects)"),
		sp(`\b__(builtins|subclasses|globals|code|closure|bases|base|mro|loader|spec|self|func|dict|class|getattribute|reduce|reduce_ex|traceback|frame)__\b|\b(tb_frame|f_back|f_globals|f_locals|f_builtins|gi_frame|cr_frame|co_code)\b`, "reaches the interpreter's internals (a dunder or frame attribute)"),
	},
	"javascript": {
		sp(`\b(process|globalThis|global|Function|eval|Reflect|Buffer|WebAssembly|module|exports|__dirname|__filename)\b`, "reaches the JavaScript runtime (process, the global object, the Function constructor, eval)"),
		sp(`\.\s*constructor\b|\[\s*['"`+"`"+`]constructor|__proto__|\b(getPrototypeOf|setPrototypeOf|defineProperty|getOwnPropertyDescriptors?)\b`, "reaches a constructor or prototype (the Function constructor's way to the runtime)"),
		sp(`\brequire\s*\(\s*[^'")\s]|\bimport\s*\(`, "loads a module by a computed name"),
	},
	"java": {
		sp(`\b(Runtime|ProcessBuilder|ProcessHandle|ClassLoader|Thread|ThreadGroup|SecurityManager|StackWalker|MethodHandles?|VarHandle|Unsafe|ShutdownHook)\b`, "reaches the JVM (Runtime, threads, class loaders, method handles)"),
		sp(`\bSystem\s*\.\s*(exit|setOut|setErr|setIn|getenv|getProperty|setProperty|getProperties|setProperties|clearProperty|load|loadLibrary|console|inheritedChannel|gc|runFinalization|getLogger)\b`, "reaches the process through System"),
		sp(`\bjava\s*\.\s*(io|nio|net|lang\s*\.\s*(reflect|invoke|instrument|management|ref|module))\b|\b(sun|jdk)\s*\.\s*\w|\bcom\s*\.\s*sun\b`, "names a package of files, processes or reflection"),
		sp(`\bClass\s*\.\s*forName\b|\b(getDeclared\w*|setAccessible|getMethod|getField|getClassLoader|newInstance)\b|\bnative\b`, "uses reflection or native code"),
	},
	"cpp": {
		sp(`(^|[^\w.>])(::\s*|std\s*::\s*)?(syscall|atexit|at_quick_exit|signal|raise|fork|vfork|execv\w*|execl\w*|system|popen|fopen|freopen|fdopen|open|creat|write|pwrite|dup|dup2|dup3|close|unlink|remove|rename|getenv|setenv|putenv|dlopen|dlsym|mmap|mprotect|ptrace|kill)\s*\(`, "calls the operating system (a C library call)"),
		sp(`\b(asm|__asm__|__asm|__builtin_\w+)\b|__attribute__|\[\[\s*gnu\s*::|##|extern\s*"C"|\b(FILE|fstream|ofstream|ifstream|filebuf)\b`, "reaches past standard C++ (inline assembly, attributes, token pasting, C linkage, files)"),
	},
	"rust": {
		sp(`\bunsafe\b`, "uses unsafe code"),
		sp(`\bextern\s*("C"|"system"|\{|fn\b)|#\s*!?\[\s*(no_mangle|export_name|link|link_name|naked)\b|\b(asm|global_asm|naked_asm)!|\blibc\b`, "reaches past Rust's pure core (foreign functions, symbols, assembly)"),
		sp(`\b(std|core|alloc)\s*::\s*(process|os|fs|env|net|ffi|io|thread|panic|intrinsics|arch|backtrace|alloc)\b|\bstd\s*::\s*\{[^;]*?\b(process|os|fs|env|net|ffi|io|thread|panic)\b`, "uses a part of std that reaches the process (process, os, fs, env, net, io, thread, panic)"),
	},
}

// importPattern finds, per language, the modules a file imports (group 1; JavaScript: group 1 or 2).
var importPattern = map[string]*regexp.Regexp{
	"python":     regexp.MustCompile(`(?m)^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*))`),
	"javascript": regexp.MustCompile(`(?:\bfrom|\bimport|\brequire\s*\()\s*['"]([^'"]+)['"]`),
	"java":       regexp.MustCompile(`(?m)^[ \t]*import[ \t]+(?:static[ \t]+)?([\w.]+(?:\.\*)?)[ \t]*;`),
	"cpp":        regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*([<"][^>"]+[>"])`),
}

// use is one module a file imports, at a line.
type use struct {
	module string
	line   int
}

// imports lists the modules src imports (lang's form of a name), with their lines.
func imports(lang string, src []byte) []use {
	var out []use
	if lang == "go" {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
		if err != nil {
			return nil // the build fails on it anyway
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out = append(out, use{p, fset.Position(im.Pos()).Line})
		}
		return out
	}
	re := importPattern[lang]
	if re == nil {
		return nil
	}
	for _, m := range re.FindAllSubmatchIndex(src, -1) {
		line := lineAt(src, m[0])
		for g := 1; g < len(m)/2; g++ {
			if m[2*g] < 0 {
				continue
			}
			text := string(src[m[2*g]:m[2*g+1]])
			if lang != "python" || g == 1 {
				out = append(out, use{text, line})
				continue
			}
			for _, part := range strings.Split(text, ",") { // import a, b as c
				name, _, _ := strings.Cut(strings.TrimSpace(part), " ")
				out = append(out, use{name, line})
			}
		}
	}
	return out
}

// lineAt is the 1-based line of offset i in src.
func lineAt(src []byte, i int) int { return 1 + strings.Count(string(src[:i]), "\n") }

// allowance is what one exercise's solution may use beyond the pure core: what its reference and stub use.
type allowance struct {
	modules map[string]bool
	reach   map[string]bool // the reachOut reasons its reference or stub matches
}

// exerciseAllowance reads ex's reference solution and stub.
func exerciseAllowance(ex Exercise) (allowance, error) {
	a := allowance{modules: map[string]bool{}, reach: map[string]bool{}}
	targets, err := referenceTargets(ex)
	if err != nil {
		return a, err
	}
	files := slices.Sorted(func(yield func(string) bool) {
		for src := range targets {
			if !yield(src) {
				return
			}
		}
	})
	files = append(files, ex.Solution...)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(f)))
		if err != nil {
			continue // a stub the exercise does not have (a solution file the model creates)
		}
		for _, u := range imports(ex.Lang, data) {
			a.modules[u.module] = true
		}
		for _, p := range reachOut[ex.Lang] {
			if p.re.Match(data) {
				a.reach[p.why] = true
			}
		}
	}
	return a, nil
}

// reachPast is why the solution file p (content data) reaches past what its exercise allows, as
// "p:line: why (text)", or "". own names the files of the solution side (a local module or header they import is
// theirs).
func reachPast(ex Exercise, a allowance, p string, data []byte, own func(string) bool) string {
	for _, u := range imports(ex.Lang, data) {
		if !moduleAllowed(ex.Lang, u.module, a, p, own) {
			return p + ":" + strconv.Itoa(u.line) + ": imports " + u.module + ", which is not in the language's pure core nor used by this exercise's reference solution"
		}
	}
	for _, pat := range reachOut[ex.Lang] {
		if a.reach[pat.why] {
			continue
		}
		if m := pat.re.FindIndex(data); m != nil {
			return p + ":" + strconv.Itoa(lineAt(data, m[0])) + ": " + pat.why + " (" + strconv.Quote(strings.TrimSpace(string(data[m[0]:m[1]]))) + ")"
		}
	}
	return ""
}

// moduleAllowed says whether a solution file p of lang may import module.
func moduleAllowed(lang, module string, a allowance, p string, own func(string) bool) bool {
	if a.modules[module] {
		return true
	}
	switch lang {
	case "python":
		if strings.HasPrefix(module, ".") || own(strings.ReplaceAll(module, ".", "/")+".py") {
			return true // the solution's own modules
		}
	case "javascript":
		return strings.HasPrefix(module, "./") || strings.HasPrefix(module, "../")
	case "cpp":
		if local, ok := strings.CutPrefix(module, `"`); ok {
			name := strings.TrimSuffix(local, `"`)
			return !strings.Contains(name, "..") && own(path.Join(path.Dir(p), name)) || own(name)
		}
		module = strings.Trim(module, "<>")
		return slices.Contains(pureCore[lang], module) || a.modules["<"+module+">"]
	case "java":
		pkg := strings.TrimSuffix(module, ".*")
		if !strings.HasSuffix(module, ".*") {
			pkg, _ = cutLast(pkg, ".")
		}
		for m := range a.modules {
			if p, _ := cutLast(strings.TrimSuffix(m, ".*"), "."); p == pkg || strings.TrimSuffix(m, ".*") == pkg {
				return true
			}
		}
		if !strings.Contains(pkg, ".") {
			return true // a class of the exercise's own (default package)
		}
		module = pkg
	}
	for _, core := range pureCore[lang] {
		if module == core || strings.HasPrefix(module, core+".") || strings.HasPrefix(module, core+"/") && lang != "go" {
			return true
		}
	}
	return false
}

// cutLast splits s at its last sep.
func cutLast(s, sep string) (string, string) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i+len(sep):]
}
