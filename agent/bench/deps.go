package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Some exercises need third-party libraries that only a package registry has, and the grader runs offline. These
// checks read the exercise's own build files and say which needs nothing can meet, so that such an exercise is
// reported as ungradable with the reason instead of failing every model.

// cargoExampleManifest is the Rust track's manifest for its reference solution: when it exists, the track's own CI
// uses it in place of Cargo.toml, because the example needs crates the stub does not.
const cargoExampleManifest = ".meta/Cargo-example.toml"

// rustManifest is the Cargo.toml a grade of ex uses: the stub's, or for the reference solution the example's.
func rustManifest(ex Exercise, reference bool) (string, error) {
	if reference {
		p := filepath.Join(ex.Dir, filepath.FromSlash(cargoExampleManifest))
		if data, err := os.ReadFile(p); err == nil {
			return string(data), nil
		}
	}
	data, err := os.ReadFile(filepath.Join(ex.Dir, "Cargo.toml"))
	if err != nil {
		return "", fmt.Errorf("%s: reading Cargo.toml: %w", ex.ID(), err)
	}
	return string(data), nil
}

var (
	tomlSection = regexp.MustCompile(`^\s*\[([^\]]+)\]\s*$`)
	tomlDep     = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=\s*(?:"([^"]*)"|\{.*\bversion\s*=\s*"([^"]*)".*\})`)
)

// missingCrates lists the dependencies of a Cargo manifest that no folder of the offline registry satisfies
// (registry entries are "name-version" folders, as in Debian's /usr/share/cargo/registry).
func missingCrates(manifest string, registry []string) []string {
	var missing []string
	section := ""
	sc := bufio.NewScanner(strings.NewReader(manifest))
	for sc.Scan() {
		line := sc.Text()
		if m := tomlSection.FindStringSubmatch(line); m != nil {
			section = strings.TrimSpace(m[1])
			continue
		}
		if section != "dependencies" && section != "dev-dependencies" {
			continue
		}
		m := tomlDep.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, req := m[1], m[2]+m[3]
		have := availableVersions(name, registry)
		if slices.ContainsFunc(have, func(v string) bool { return caretMatch(req, v) }) {
			continue
		}
		msg := name + " " + req
		if len(have) > 0 {
			msg += " (offline registry has " + strings.Join(have, ", ") + ")"
		}
		missing = append(missing, msg)
	}
	return missing
}

func availableVersions(name string, registry []string) []string {
	var out []string
	for _, entry := range registry {
		if v, ok := strings.CutPrefix(entry, name+"-"); ok && parseVersion(v) != nil {
			out = append(out, v)
		}
	}
	return out
}

// caretMatch says whether version v satisfies Cargo's default (caret) requirement req: not lower than req, and
// equal up to req's first non-zero component (or its last one when all are zero). "0.3" admits 0.3.9; "0.4.4"
// refuses 0.4.3; "1.0" admits 1.0.69 and refuses 2.0.0.
func caretMatch(req, v string) bool {
	r, have := parseVersion(strings.TrimPrefix(strings.TrimSpace(req), "^")), parseVersion(v)
	if r == nil || have == nil {
		return false
	}
	k := slices.IndexFunc(r, func(n int) bool { return n != 0 })
	if k < 0 {
		k = len(r) - 1
	}
	return slices.Equal(have[:k+1], r[:k+1]) && slices.Compare(have[k+1:], r[k+1:]) >= 0
}

// parseVersion reads "1", "1.2" or "1.2.3" (a pre-release or build suffix is dropped).
func parseVersion(s string) []int {
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return nil
	}
	out := make([]int, 3) // missing components are 0
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil
		}
		out[i] = n
	}
	return out
}

// javaLibraries maps Maven coordinates an exercise's build.gradle may name to the jar that stands in for them.
// JUnit and AssertJ are always on the class path; anything not listed here cannot be had offline. (Debian's
// libandroid-json-java is not a stand-in for org.json:json: its JSONException is checked, so rest-api's
// reference solution does not compile against it.)
var javaLibraries = map[string]string{
	"org.junit:junit-bom":             "",
	"org.junit.jupiter:junit-jupiter": "",
	"org.assertj:assertj-core":        "",
}

// assertjTooOld matches javac's report, in a test file, of a method missing from an AssertJ class (they are named
// *Assert): the tests call AssertJ API newer than the installed one (Debian 12 has 3.14; the exercises ask for
// 3.25). A solution cannot cause it: the tests are restored, and their assertions only use AssertJ's types.
var assertjTooOld = regexp.MustCompile(`(?m)^src/test/java/\S+\.java:\d+: error: cannot find symbol\n(?:.*\n){1,4}?\s*location: (class|interface) \w*Assert(<.*>)?\s*$`)

var gradleDep = regexp.MustCompile(`(?m)^\s*(?:testImplementation|implementation|api|compileOnly|runtimeOnly)\s*\(?\s*(?:platform\()?["']([^:"']+):([^:"']+)(?::[^"']*)?["']`)

// javaJars returns the extra jars ex's build.gradle asks for, and the coordinates of those nothing here provides.
func javaJars(ex Exercise) (jars, missing []string, err error) {
	data, err := os.ReadFile(filepath.Join(ex.Dir, "build.gradle"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading build.gradle: %w", ex.ID(), err)
	}
	for _, m := range gradleDep.FindAllSubmatch(data, -1) {
		coord := string(m[1]) + ":" + string(m[2])
		jar, ok := javaLibraries[coord]
		switch {
		case !ok:
			missing = append(missing, coord)
		case jar != "":
			jars = append(jars, jar)
		}
	}
	return jars, missing, nil
}

// needsBoost says whether ex's CMakeLists.txt looks for Boost (gigasecond and meetup use its date_time).
func needsBoost(ex Exercise) bool {
	data, err := os.ReadFile(filepath.Join(ex.Dir, "CMakeLists.txt"))
	return err == nil && regexp.MustCompile(`(?i)find_package\(\s*Boost\b`).Match(data)
}

var goTestFunc = regexp.MustCompile(`(?m)^func (Test|Example|Fuzz)\w*\(`)

// hasGoTests says whether ex's Go test files define any test; go/counter's do not (the model is to write them).
func hasGoTests(ex Exercise) bool {
	for _, f := range slices.Concat(ex.Test, ex.Editor) {
		data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(f)))
		if err == nil && goTestFunc.Match(data) {
			return true
		}
	}
	return false
}
