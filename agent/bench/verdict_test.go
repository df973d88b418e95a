package bench

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	pass := func(n string) caseResult { return caseResult{name: n, passed: true} }
	for _, c := range []struct {
		name     string
		expected []string
		got      []caseResult
		passed   int
		why      string // a part of the reason; "" for a pass
	}{
		{"all passed", []string{"a", "b"}, []caseResult{pass("a"), pass("b")}, 2, ""},
		{"an extra passed test is fine", []string{"a"}, []caseResult{pass("a"), pass("a/sub")}, 1, ""},
		{"one missing", []string{"a", "b"}, []caseResult{pass("a")}, 1, `not reported passed: "b"`},
		{"count matters", []string{"a", "a"}, []caseResult{pass("a")}, 1, `not reported passed: "a"`},
		{"a failure anywhere fails", []string{"a"}, []caseResult{pass("a"), {name: "x"}}, 1, `failed: "x"`},
		{"a skipped extra is no failure", []string{"a"}, []caseResult{pass("a"), {name: "slow", skipped: true}}, 1, ""},
		{"a skipped expected test is missing", []string{"a"}, []caseResult{{name: "a", skipped: true}}, 0, `not reported passed: "a"`},
		{"nothing reported", []string{"a"}, nil, 0, "0 of 1"},
	} {
		passed, why := judge(c.expected, c.got)
		if passed != c.passed || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: judge = %d, %q; want %d and a reason with %q", c.name, passed, why, c.passed, c.why)
		}
	}
}

// trailerFor builds a trailer as gradeCommand's shell prints it.
func trailerFor(files map[string]string, code string) string {
	var b strings.Builder
	b.WriteString("\n" + trailerBegin + "\n")
	for name, data := range files {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write([]byte(data))
		w.Close()
		b.WriteString("file " + name + " " + base64.StdEncoding.EncodeToString(z.Bytes()) + "\n")
	}
	b.WriteString(strings.Repeat("0", 64) + "  tests/a.rs\n")
	b.WriteString(trailerEnd + " " + code + "\n")
	return b.String()
}

func TestParseTrailer(t *testing.T) {
	good := "test output\n" + trailerFor(map[string]string{"end": "n1"}, "0")
	out, c, ok, suspect, err := parseTrailer(good)
	if !ok || suspect != "" || err != nil || out != "test output\n" || string(c.files["end"]) != "n1" || c.sums["tests/a.rs"] == "" {
		t.Errorf("a good trailer: out %q ok %v suspect %q err %v files %q sums %v", out, ok, suspect, err, c.files, c.sums)
	}
	// A solution that prints a trailer of its own before the real one.
	forged := "x\n" + trailerFor(map[string]string{"end": "forged"}, "0") + good
	if _, c, ok, suspect, _ := parseTrailer(forged); !ok || suspect == "" || string(c.files["end"]) != "n1" {
		t.Errorf("a forged trailer before the real one: ok %v suspect %q end %q; want the real one read and suspect", ok, suspect, c.files["end"])
	}
	// Output after the end line: a process the solution left behind.
	if _, _, _, suspect, _ := parseTrailer(good + "late line\n"); suspect == "" {
		t.Error("output after the trailer is not suspect")
	}
	// A command killed before its trailer, or cut in the middle.
	for _, s := range []string{"only test output\n", "x\n\n" + trailerBegin + "\nfile end H4sI"} {
		if _, _, ok, _, _ := parseTrailer(s); ok {
			t.Errorf("an incomplete trailer read as complete: %q", s)
		}
	}
	if _, _, _, _, err := parseTrailer("\n" + trailerBegin + "\nfile end !!!\n" + trailerEnd + " 0\n"); err == nil {
		t.Error("a file that is not gzip+base64 gave no error")
	}
}

func TestRunSuspect(t *testing.T) {
	h := harness{ends: 1, checked: map[string][]byte{"t.py": []byte("x")}}
	sums := map[string]string{"t.py": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"} // sha256("x")
	pass := []caseResult{{name: "T.a", passed: true}}
	fail := []caseResult{{name: "T.a"}}
	for _, c := range []struct {
		name     string
		lines    []string // what the pipe carried
		reported []caseResult
		out      string
		code     int
		sums     map[string]string
		suspect  string // a part of the reason; "" for none
	}{
		{"an honest pass", []string{"pass\tT.a", "end\tN"}, pass, "", 0, sums, ""},
		{"an honest failure", []string{"fail\tT.a", "end\tN"}, fail, "", 1, sums, ""},
		{"a crash before the end", []string{"fail\tT.a"}, nil, "", 1, sums, ""},
		{"exit 0 before the end", nil, nil, "", 0, sums, "exited with status 0 before"},
		{"a forged end line", []string{"pass\tT.a", "end\tguess"}, pass, "", 0, sums, "not the grader's"},
		{"the nonce in the output", []string{"pass\tT.a", "end\tN"}, pass, "here is N", 0, sums, "nonce"},
		{"assertions replaced", []string{"pass\tT.a", "end\tN\ttampered unittest.TestCase.assertEqual"}, pass, "", 0, sums, "assertEqual"},
		{"a test file changed", []string{"pass\tT.a", "end\tN"}, pass, "", 0, map[string]string{"t.py": strings.Repeat("0", 64)}, "changed or removed t.py"},
		{"a result after the end", []string{"fail\tT.a", "end\tN", "pass\tT.a"}, pass, "", 0, sums, "after the framework's end"},
		{"a report rewritten after the tests", []string{"fail\tT.a", "end\tN"}, pass, "", 0, sums, "report was rewritten"},
	} {
		st, err := readStream("python", c.lines, "N", h.ends)
		must(t, err)
		ended, why := checkEnds(h, st, "N")
		s := runSuspect(h, collected{sums: c.sums}, st, c.reported, []string{"T.a"}, "N", c.out, c.code, ended, why)
		if (c.suspect == "") != (s == "") || !strings.Contains(s, c.suspect) {
			t.Errorf("%s: suspect %q, want %q", c.name, s, c.suspect)
		}
	}
}

func TestExpectedTestNames(t *testing.T) {
	check := func(lang string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", lang, got, want)
		}
	}
	goSrc := "package p\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\nfunc Testlower(t *testing.T) {}\nfunc TestB(b *testing.B) {}\nfunc (x X) TestM(t *testing.T) {}\nfunc ExampleF() {\n\t// Output: 1\n}\nfunc ExampleG() {}\n"
	names, err := goTestNames("p_test.go", []byte(goSrc))
	must(t, err)
	check("go", names, []string{"TestA", "ExampleF"})

	check("python", pythonTestNames("x_test.py", []byte("import unittest\n\nclass XTest(unittest.TestCase):\n    def test_a(self):\n        pass\n\n    def helper(self):\n        pass\n\ndef test_top():\n    pass\n")),
		[]string{"XTest.test_a", "x_test.test_top"})

	check("javascript", jestTestNames([]byte("describe('d', () => {\n  test('it\\'s one', () => {});\n  it(\"two\", () => {});\n  test.skip('slow', () => {});\n  /x/.test('s');\n  test(\n    'three',\n    () => {});\n});\n")),
		[]string{"it's one", "two", "three"})

	check("rust", rustTestNames([]byte("#[test]\nfn a() {}\n\n#[test]\n#[ignore]\nfn b() {}\n\n#[test]\n#[cfg(feature = \"x\")]\nfn gated() {}\n\n#[cfg(feature = \"io\")]\nmod io {\n    #[test]\n    fn in_gated_mod() {}\n}\n\nmod m {\n    #[test]\n    fn c() {}\n}\nmacro_rules! t { ($n:ident) => { #[test]\n fn $n() {} } }\n")),
		[]string{"a", "b", "c"})

	check("cpp", catchTestNames([]byte("TEST_CASE(\"one\") {}\n#if defined(EXERCISM_RUN_ALL_TESTS)\nTEST_CASE(\n    \"two \\\"quoted\\\"\", \"[tag]\") {}\n#endif\n#if defined(EXERCISM_INCLUDE_BENCHMARK)\nTEST_CASE(\"bench\") {}\n#endif\n#ifdef EXERCISM_TEST_SUITE\n#include <catch2/catch.hpp>\n#else\nTEST_CASE(\"else\") {}\n#endif\n")),
		[]string{"one", `two "quoted"`, "else"})

	check("java", junitTestNames([]byte("class T {\n    @Test\n    public void a() {\n    }\n\n    @Test\n    @DisplayName(\"x\")\n    void b() throws Exception {\n    }\n\n    void helper() {}\n}\n")),
		[]string{"a", "b"})
}

// TestExpectedTestsOverTheBenchmark reads the expected tests of every exercise: each defines some (go/counter
// excepted, whose test file has none), and where a plain count of the tests' markers in the files is possible
// (Python def test_, Java @Test, jest test(/it( calls, Catch TEST_CASE( less the benchmark-only ones) the parsers
// find exactly that many.
func TestExpectedTestsOverTheBenchmark(t *testing.T) {
	exs, err := Discover(benchmarkDir(t), Filter{})
	must(t, err)
	markers := map[string]*regexp.Regexp{
		"python":     regexp.MustCompile(`(?m)^\s+def test_`),
		"java":       regexp.MustCompile(`@Test\b`),
		"javascript": regexp.MustCompile(`(?m)^\s*x?(test|it)\(`),
		"cpp":        regexp.MustCompile(`\bTEST_CASE\(`),
	}
	benchOnly := regexp.MustCompile(`(?s)#if defined\(EXERCISM_INCLUDE_BENCHMARK\).*?#endif`)
	total := map[string]int{}
	for _, ex := range exs {
		names, err := expectedTests(ex)
		if ex.ID() == "go/counter" {
			if err == nil {
				t.Errorf("go/counter: %d tests, want none", len(names))
			}
			continue
		}
		if err != nil {
			t.Error(err)
			continue
		}
		total[ex.Lang] += len(names)
		re := markers[ex.Lang]
		if re == nil {
			continue
		}
		raw := 0
		for _, f := range ex.Test {
			data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(f)))
			must(t, err)
			raw += len(re.FindAll(benchOnly.ReplaceAll(data, nil), -1))
		}
		if raw != len(names) {
			t.Errorf("%s: %d test markers in the files, %d tests read", ex.ID(), raw, len(names))
		}
	}
	t.Logf("expected tests per language: %v", total)
}

func TestTakeRecord(t *testing.T) {
	sign := func(key string, r record) string {
		raw, _ := json.Marshal(r)
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(raw)
		w.Close()
		body := base64.StdEncoding.EncodeToString(z.Bytes())
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		return "\n" + recordMarker + body + " " + hex.EncodeToString(m.Sum(nil)) + "\n"
	}
	real := record{Code: 1, Lines: []string{"fail\tT.a", "end\tN"}}
	good := "test output\n" + sign("K", real)
	rest, rec, ok, suspect, err := takeRecord(good, "K")
	if !ok || suspect != "" || err != nil || rest != "test output\n" || rec.Code != 1 || len(rec.Lines) != 2 {
		t.Errorf("a good record: rest %q rec %+v ok %v suspect %q err %v", rest, rec, ok, suspect, err)
	}
	// A solution that prints a record of its own, after the real one or instead of it: no key, no signature.
	forged := sign("guess", record{Lines: []string{"pass\tT.a", "end\tN"}})
	if _, rec, ok, suspect, _ := takeRecord(good+forged, "K"); !ok || suspect == "" || rec.Code != 1 {
		t.Errorf("a forged record after the real one: ok %v suspect %q rec %+v; want the real one read and suspect", ok, suspect, rec)
	}
	if _, _, ok, suspect, _ := takeRecord("out"+forged, "K"); ok || suspect == "" {
		t.Errorf("a forged record alone: ok %v suspect %q; want no record and suspect", ok, suspect)
	}
	if _, _, _, suspect, _ := takeRecord(good+"late\n", "K"); suspect == "" {
		t.Error("output after the record is not suspect")
	}
	if _, _, ok, _, _ := takeRecord("killed before its record\n", "K"); ok {
		t.Error("no record read as one")
	}
}
