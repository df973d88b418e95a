package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
)

// Toolchains says where the grader finds what the tracks need, as paths seen from inside the sandbox. The
// defaults match what scripts/setup-toolchains.sh installs on Debian 12 (and what the executor image carries).
type Toolchains struct {
	// JSModules is a node_modules folder holding jest 29.7.0 and the Exercism babel preset, installed once;
	// each JavaScript exercise gets a node_modules symlink to it instead of an npm install per exercise.
	JSModules string
	// CargoRegistry is a directory source of crates (Debian's librust-*-dev packages put theirs in
	// /usr/share/cargo/registry); cargo runs offline against it instead of crates.io.
	CargoRegistry string
	// JavaLibs is the folder with the JUnit 5 console launcher, AssertJ and org.json jars (Debian's /usr/share/java).
	JavaLibs string
	// CompilerCache puts ccache in front of the C++ compiler, which turns the 20 s build of Catch's main into a
	// cache hit. The cache lives in the grading sandbox's cache folder: turn it on only where no model's command
	// can write that folder (-selftest; a run whose agent sandbox has a cache folder of its own).
	CompilerCache bool
}

// CacheDir is where scripts/setup-toolchains.sh installs what the grader shares between exercises:
// $GOALBOX_CACHE_DIR, else /var/cache/goalbox for root and ~/.cache/goalbox for anyone else (as the script does).
func CacheDir() string {
	if d := os.Getenv("GOALBOX_CACHE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/goalbox"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "goalbox")
	}
	return "/var/cache/goalbox"
}

// DefaultToolchains is the layout setup-toolchains.sh makes.
func DefaultToolchains() Toolchains {
	return Toolchains{
		JSModules:     filepath.Join(CacheDir(), "js", "node_modules"),
		CargoRegistry: "/usr/share/cargo/registry",
		JavaLibs:      "/usr/share/java",
	}
}

// ImageToolchains is the layout inside the executor image (deploy/Dockerfile.exec: jest under
// /var/cache/goalbox/js), which remote sandboxes run: their grader's paths are the sandbox's, not this machine's.
func ImageToolchains() Toolchains {
	t := DefaultToolchains()
	t.JSModules = "/var/cache/goalbox/js/node_modules"
	return t
}

// toolchain is what a probe found out about one language in the sandbox.
type toolchain struct {
	missing string   // why the language cannot be graded; empty when it can
	python  string   // the interpreter that has pytest
	crates  []string // name-version folders in the offline cargo registry
	boost   bool     // Boost date_time headers are there (two C++ exercises need them)
}

// probes remembers each language's probe: the toolchains do not change during a run.
type probes struct {
	mu   sync.Mutex
	done map[string]toolchain
}

// probe checks, inside the sandbox, that lang's toolchain is there. Only an infrastructure error (the sandbox
// itself failing) is returned as an error; a missing tool is a reason in the result.
func (g *Grader) probe(ctx context.Context, sb loop.Sandbox, lang string) (toolchain, error) {
	g.probes.mu.Lock()
	defer g.probes.mu.Unlock()
	if tc, ok := g.probes.done[lang]; ok {
		return tc, nil
	}
	t := g.Toolchains
	var cmd, hint string
	switch lang {
	case "python":
		cmd = `for p in python3 /usr/bin/python3; do if "$p" -c 'import pytest' >/dev/null 2>&1; then command -v "$p"; exit 0; fi; done; exit 1`
		hint = "no python3 that can import pytest (Debian: apt-get install python3-pytest)"
	case "go":
		cmd, hint = "go version", "no go on PATH"
	case "rust":
		cmd = "cargo --version >/dev/null && { ls " + shellQuote(t.CargoRegistry) + " 2>/dev/null; true; }"
		hint = "no cargo on PATH"
	case "javascript":
		cmd = "node --version >/dev/null && grep -q '\"version\": \"29.7.0\"' " + shellQuote(t.JSModules+"/jest/package.json") +
			" && test -r " + shellQuote(t.JSModules+"/@exercism/babel-preset-javascript/package.json")
		hint = "no node, or no jest 29.7.0 with the Exercism babel preset in " + t.JSModules + " (run scripts/setup-toolchains.sh)"
	case "cpp":
		cmd = "cmake --version >/dev/null && make --version >/dev/null && g++ --version >/dev/null"
		if t.CompilerCache {
			cmd += " && ccache --version >/dev/null"
		}
		cmd += " && { test -r /usr/include/boost/date_time/posix_time/posix_time.hpp && echo boost; true; }"
		hint = "no cmake, make or g++ on PATH (Debian: apt-get install cmake make g++)"
		if t.CompilerCache {
			hint = "no cmake, make, g++ or ccache on PATH (Debian: apt-get install cmake make g++ ccache)"
		}
	case "java":
		cmd = "javac -version >/dev/null 2>&1 && java -version >/dev/null 2>&1 && test -r " + shellQuote(t.JavaLibs+"/junit-platform-console-standalone.jar") +
			" && test -r " + shellQuote(t.JavaLibs+"/assertj-core.jar")
		hint = "no javac, or no JUnit 5 console launcher and AssertJ in " + t.JavaLibs + " (Debian: apt-get install default-jdk-headless junit5 libassertj-core-java)"
	default:
		return toolchain{}, fmt.Errorf("unknown language %q", lang)
	}
	code, out, err := runCommand(ctx, sb, cmd, ".", time.Minute)
	if err != nil {
		return toolchain{}, fmt.Errorf("probing the %s toolchain: %w", lang, err)
	}
	var tc toolchain
	switch {
	case code != 0:
		tc.missing = hint
	case lang == "python":
		tc.python = strings.TrimSpace(out)
	case lang == "rust":
		tc.crates = strings.Fields(out)
	case lang == "cpp":
		tc.boost = strings.Contains(out, "boost")
	}
	if g.probes.done == nil {
		g.probes.done = map[string]toolchain{}
	}
	g.probes.done[lang] = tc
	return tc, nil
}

// shellQuote quotes s for sh -c.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
