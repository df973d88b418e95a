package bench

import (
	"strings"
	"testing"
)

// TestReferencesUseOnlyWhatIsAllowed checks the source checks against every exercise of the benchmark: each
// reference solution and each stub uses only what its exercise allows (no suspect finding), so the allow-lists
// cost no honest solution a grade. The selftest shows the same through real grades.
func TestReferencesUseOnlyWhatIsAllowed(t *testing.T) {
	exs, err := Discover(benchmarkDir(t), Filter{})
	must(t, err)
	for _, ex := range exs {
		if ex.Lang == "go" && !hasGoTests(ex) {
			continue // go/counter: its task is to write the tests; ungradable
		}
		for _, reference := range []bool{true, false} {
			ws, err := Prepare(ex, t.TempDir())
			must(t, err)
			if reference {
				must(t, PlaceReference(ex, ws))
			}
			found, err := suspectSource(ex, ws)
			must(t, err)
			if found != "" {
				t.Errorf("%s (reference %v): %s", ex.ID(), reference, found)
			}
		}
	}
}

// TestReachingPastIsSuspect shows each language's check on a solution that reaches past its pure core, beside the
// same exercise's reference, which passes.
func TestReachingPastIsSuspect(t *testing.T) {
	for _, c := range []struct {
		id, file, src, want string
	}{
		{"python/proverb", "proverb.py", "import atexit\n\ndef proverb(*a, qualifier=None):\n    return []\n", "proverb.py:1: imports atexit"},
		{"python/proverb", "proverb.py", "def proverb(*a, qualifier=None):\n    m = __import__('o' + 's')\n    return []\n", "proverb.py:2: reaches the interpreter"},
		{"python/proverb", "proverb.py", "def proverb(*a, qualifier=None):\n    return ().__class__.__base__.__subclasses__()\n", "reaches the interpreter's internals"},
		{"go/octal", "octal.go", "package octal\n\nimport \"syscall\"\n\nvar _ = syscall.Getpid\n", "octal.go:3: imports syscall"},
		{"go/octal", "octal.go", "package octal\n\nimport (\n\t\"fmt\"\n\tx \"os\"\n)\n\nvar _ = x.Stdout\nvar _ = fmt.Sprint\n", "octal.go:5: imports os"},
		{"javascript/tournament", "tournament.js", "const p = Buffer.constructor('return process')();\nexport const tournamentTally = () => '';\n", "tournament.js:1: reaches the JavaScript runtime"},
		{"javascript/tournament", "tournament.js", "const p = [].map['constructor']('return this')();\nexport const tournamentTally = () => '';\n", "reaches a constructor"},
		{"java/connect", "src/main/java/Connect.java", "class Connect {\n    static { Runtime.getRuntime().addShutdownHook(null); }\n}\n", "Connect.java:2: reaches the JVM"},
		{"java/connect", "src/main/java/Connect.java", "import java.nio.file.Files;\nclass Connect {}\n", "Connect.java:1: imports java.nio.file.Files"},
		{"cpp/diamond", "diamond.cpp", "#include \"diamond.h\"\n#include <unistd.h>\n", "diamond.cpp:2: imports <unistd.h>"},
		{"cpp/diamond", "diamond.cpp", "#include \"diamond.h\"\nextern \"C\" long syscall(long, ...);\n", "diamond.cpp:2: calls the operating system"},
		{"rust/acronym", "src/lib.rs", "pub fn abbreviate(_p: &str) -> String {\n    unsafe { std::hint::unreachable_unchecked() }\n}\n", "src/lib.rs:2: uses unsafe code"},
		{"rust/acronym", "src/lib.rs", "use std::{fs, collections::HashMap};\npub fn abbreviate(_p: &str) -> String { String::new() }\n", "src/lib.rs:1: uses a part of std"},
	} {
		lang, slug, _ := strings.Cut(c.id, "/")
		ex := oneExercise(t, lang, slug)
		ws, err := Prepare(ex, t.TempDir())
		must(t, err)
		must(t, PlaceReference(ex, ws))
		if found, err := suspectSource(ex, ws); err != nil || found != "" {
			t.Fatalf("%s: the reference is suspect (%q, %v): the control fails", c.id, found, err)
		}
		writeCheat(t, cheat{files: map[string]string{c.file: c.src}}, ws.Dir())
		found, err := suspectSource(ex, ws)
		must(t, err)
		if !strings.Contains(found, c.want) {
			t.Errorf("%s: suspect %q, want %q", c.id, found, c.want)
		}
	}
}
