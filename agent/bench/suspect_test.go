package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuspectSource runs the source checks over files a solution might hold: what a solution has no honest use
// for is named, ordinary code (a method called exit, a word list with "testing" in it, a robot that halts) is not.
func TestSuspectSource(t *testing.T) {
	for _, c := range []struct {
		lang, file, src string
		suspect         bool
	}{
		{"go", "x.go", "package x\n\nimport \"os\"\n\nfunc init() { os.Exit(0) }\n", true},
		{"go", "x.go", "package x\n\nimport (\n\t\"testing\"\n)\n\nvar _ testing.T\n", true},
		{"go", "x.go", "package x\n\nvar words = []string{\"testing\", \"exit\"}\n", false},
		{"go", "x.s", "TEXT ·f(SB),0,$0\n", true},
		{"python", "x.py", "import sys\nsys.exit(0)\n", true},
		{"python", "x.py", "exit()\n", true},
		{"python", "x.py", "class Door:\n    def exit(self, code):\n        self.exit_code = code\n        self.log.exit(1)\n", false},
		{"python", "x.py", "import unittest\n", true},
		{"javascript", "x.js", "const p = process; p.exit(0);\nprocess.exit(0);\n", true},
		{"javascript", "x.js", "globalThis.expect = () => ({ toEqual() {} });\n", true},
		{"javascript", "x.js", "export const exit = (room) => room.exit();\n", false},
		{"rust", "src/lib.rs", "#[used]\n#[link_section = \".init_array\"]\nstatic F: fn() = f;\n", true},
		{"rust", "src/lib.rs", "pub fn exit_code() -> i32 { 0 }\n", false},
		{"rust", "Cargo.toml", "[package]\nname = \"x\"\nbuild = \"gen.rs\"\n", true},
		{"rust", "Cargo.toml", "[package]\nname = \"x\"\n\n[dependencies]\nrand = \"0.8\"\n", false},
		{"cpp", "x.cpp", "#include <cstdlib>\nstruct S { S() { std::exit(0); } } s;\n", true},
		{"cpp", "x.cpp", "__attribute__((constructor)) static void f() {}\n", true},
		{"cpp", "x.cpp", "void robot::exit_room() { state.exit(); }\n", false},
		{"java", "src/main/java/X.java", "class X { static { System.exit(0); } }\n", true},
		{"java", "src/main/java/X.java", "class Robot { void halt() {} void stop() { halt(); } }\n", false},
		{"java", "src/main/java/X.java", "import org.junit.jupiter.api.Assertions;\n", true},
	} {
		dir := t.TempDir()
		ex := Exercise{Lang: c.lang, Slug: "x", Dir: t.TempDir(), Solution: []string{c.file}}
		ws := Workspace{Root: dir, Rel: "x"}
		p := filepath.Join(ws.Dir(), filepath.FromSlash(c.file))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(c.src), 0o644))
		got, err := suspectSource(ex, ws)
		must(t, err)
		if (got != "") != c.suspect {
			t.Errorf("%s %s %q: suspect %q, want suspect %v", c.lang, c.file, strings.TrimSpace(c.src), got, c.suspect)
		}
	}
}
