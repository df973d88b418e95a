package bench

import (
	"bytes"
	"compress/zlib"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The verdict's source is the collector's record (harness/collector.py): the per-test results as the framework
// reported them while the tests ran, each line read from a pipe the moment it was written and frozen there, in a
// process the solution does not run in and whose memory and descriptors it cannot reach (undumpable). The record
// is signed with a key only the grader and the collector have. Who writes the lines, per language:
//
//   - python: the grader's conftest, from pytest's report of each test (pytest_runtest_logreport), then the end
//     line after the session (pytest_unconfigure), and it closes the pipe;
//   - javascript: the grader's jest reporter, per test case (onTestCaseResult) and after the run (onRunComplete),
//     and it closes the pipe;
//   - java: the grader's launcher, per test (a JUnit Platform listener) and after the launcher returns;
//   - cpp: the grader's Catch main, per test case (a Catch listener) and after the session, and it closes the pipe;
//   - rust: libtest itself (--logfile on the pipe: "ok name", "failed name" as each test ends), and the epilogue
//     test after the others;
//   - go: cmd/go, a process the solution does not run in, writes its JSON event stream there; the end is the
//     grader's TestMain printing the nonce after m.Run.
//
// The end line carries the epilogue's nonce. A test result after the framework's end is late: a solution's code
// that ran after the framework was done (an atexit handler, a shutdown hook, a static destructor) wrote it, and the
// grade is suspect. The report files the frameworks write are read too, but only to compare: a report that says
// more tests passed than the pipe did was rewritten after the fact, and the grade is suspect.

const recordMarker = "@@goalbox-record "

// record is the collector's account of one test run.
type record struct {
	Code  int      `json:"code"`  // the test command's exit status
	Lines []string `json:"lines"` // what the pipe carried before the test command exited, in order
}

// newKey is 256 random bits in hex: the key of one grade's record.
func newKey() string { return newNonce() + newNonce() }

// takeRecord finds the collector's record in stdout and returns stdout without it. ok is false when there is no
// record line; suspect is set when a record line does not verify under key (solution code printed it) or output
// follows the record.
func takeRecord(stdout, key string) (rest string, rec record, ok bool, suspect string, err error) {
	rest = stdout
	for {
		i := strings.LastIndex(rest, "\n"+recordMarker)
		if i < 0 {
			return stdout, rec, false, suspect, nil
		}
		line, after, _ := strings.Cut(rest[i+1:], "\n")
		body, mac, _ := strings.Cut(strings.TrimPrefix(line, recordMarker), " ")
		want := hmac.New(sha256.New, []byte(key))
		want.Write([]byte(body))
		got, _ := hex.DecodeString(strings.TrimSpace(mac))
		if !hmac.Equal(got, want.Sum(nil)) {
			suspect = "a record line the collector did not sign: solution code printed it"
			rest = rest[:i]
			continue
		}
		if strings.TrimSpace(after) != "" && suspect == "" {
			suspect = "output follows the collector's record: a process the solution left behind printed after the grade"
		}
		raw, derr := base64.StdEncoding.DecodeString(body)
		if derr == nil {
			var zr io.ReadCloser
			if zr, derr = zlib.NewReader(bytes.NewReader(raw)); derr == nil {
				raw, derr = io.ReadAll(zr)
			}
		}
		if derr == nil {
			derr = json.Unmarshal(raw, &rec)
		}
		if derr != nil {
			return rest[:i], rec, false, suspect, fmt.Errorf("the collector's record: %v", derr)
		}
		return rest[:i], rec, true, suspect, nil
	}
}

// stream is the per-test results of one run as the pipe carried them.
type stream struct {
	cases []caseResult
	ends  []string // the end lines' nonces, in order
	notes []string // what the end lines add (python: assertion methods replaced during the run)
	late  []string // test results that came after the last end the harness expects
	text  string   // go: the human output, rendered from cmd/go's events
}

var docTestName = regexp.MustCompile(`^\S+\.rs - .* \(line \d+\)$`)

// readStream reads the lines of lang's pipe. wantEnds is how many end lines the harness writes (one per test
// process; Rust: one per test file).
func readStream(lang string, lines []string, nonce string, wantEnds int) (stream, error) {
	var s stream
	add := func(c caseResult) {
		if len(s.ends) >= wantEnds && !(lang == "rust" && docTestName.MatchString(c.name)) {
			s.late = append(s.late, c.name)
			return
		}
		s.cases = append(s.cases, c)
	}
	if lang == "go" {
		var text strings.Builder
		err := eachGoEvent([]byte(strings.Join(lines, "\n")), func(e goEvent) {
			if e.Action == "output" || e.Action == "build-output" {
				if rest, isEnd := strings.CutPrefix(strings.TrimSpace(e.Output), goEndMarker); isEnd && e.Test == "" {
					s.ends = append(s.ends, rest)
					return
				}
				text.WriteString(e.Output)
			}
			if e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
				add(caseResult{name: e.Test, passed: e.Action == "pass", skipped: e.Action == "skip"})
			}
		})
		s.text = text.String()
		return s, err
	}
	for _, line := range lines {
		if lang == "rust" {
			status, name, _ := strings.Cut(line, " ")
			switch {
			case status == "end":
				n, _, _ := strings.Cut(name, " ")
				s.ends = append(s.ends, n)
			case name == rustEpilogueTest:
			case status == "ok" || status == "ignored":
				add(caseResult{name: libtestName(name), passed: status == "ok", skipped: status == "ignored"})
			default: // failed, failed: <message>, anything else
				add(caseResult{name: libtestName(name)})
			}
			continue
		}
		status, rest, ok := strings.Cut(line, "\t")
		if !ok {
			return s, fmt.Errorf("the harness's line %q is not status<TAB>name", line)
		}
		if status == "end" {
			n, note, _ := strings.Cut(rest, "\t")
			s.ends = append(s.ends, n)
			if note != "" {
				s.notes = append(s.notes, note)
			}
			continue
		}
		add(caseResult{name: rest, passed: status == "pass", skipped: status == "skip"})
	}
	return s, nil
}

// goEndMarker starts the line the grader's TestMain prints after m.Run, followed by the nonce.
const goEndMarker = "@@goalbox-end "

// libtestName is a libtest path's last part (the name the grader expects).
func libtestName(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 && !strings.Contains(name, " ") {
		return name[i+2:]
	}
	return name
}
