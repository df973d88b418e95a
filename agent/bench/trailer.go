package bench

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The grade runs one command: the collector (harness/collector.py), the grade's first process, which the
// solution never runs in. Its standard input carries the record's key, the epilogue's nonce and two scripts: the
// test command, which it runs with the per-test results' pipe as descriptor 3 (record.go), and then the trailer,
// which prints the report files (gzip, base64: one line each, whatever they hold), the checksums of the files the
// run must not change and an end line with the test command's exit status, and removes $GOALBOX_DIR and the
// grader's files. The trailer runs after the test process has exited, so it is the last thing on stdout before the
// collector's record; a solution can print lines that look like it before, but then the marker appears twice,
// which the grader treats as suspect.

const (
	trailerBegin = "@@goalbox-trailer-begin"
	trailerEnd   = "@@goalbox-trailer-end"
)

// gradeCommand is the command that runs h and the standard input that goes with it, which carries the grade's
// secrets: key signs the collector's record, nonce is what the harness's epilogue must give back.
func gradeCommand(h harness, key, nonce string) (command, stdin string) {
	command = `P=/usr/bin/python3; [ -x "$P" ] || P=python3; exec "$P" -I -S -B ` + harnessDir + "/collector.py"
	return command, key + "\n" + nonce + "\n" + h.command + "\x00" + trailerScript(h)
}

// trailerScript prints the trailer for h; the collector gives it the test command's status as $GOALBOX_CODE.
func trailerScript(h harness) string {
	var b strings.Builder
	b.WriteString("printf '\\n%s\\n' " + trailerBegin + "\n")
	if len(h.reports) > 0 {
		b.WriteString("for f in")
		for _, f := range h.reports {
			b.WriteString(" " + shellQuote(f))
		}
		b.WriteString(`; do if [ -f "$GOALBOX_DIR/$f" ]; then printf 'file %s ' "$f"; gzip -c "$GOALBOX_DIR/$f" | base64 -w0; echo; fi; done` + "\n")
	}
	if len(h.checked) > 0 {
		b.WriteString("sha256sum --")
		for _, f := range sortedKeys(h.checked) {
			b.WriteString(" " + shellQuote(f))
		}
		b.WriteString(" 2>/dev/null\n")
	}
	b.WriteString(`printf '%s %d\n' ` + trailerEnd + ` "$GOALBOX_CODE"` + "\n")
	// The grader's files go, and the exercise's own come back, so the next try finds the exercise as it was.
	// (Where this user may not write them, the next Restore does it.)
	b.WriteString(`rm -rf "$GOALBOX_DIR" ` + harnessDir + " 2>/dev/null")
	for _, f := range sortedKeys(h.files) {
		if strings.HasPrefix(f, harnessDir+"/") {
			continue
		}
		b.WriteString("; rm -f " + shellQuote(f) + " 2>/dev/null")
		if own, ok := h.pristine[f]; ok {
			// Compressed: a Rust test file can be 60 KB.
			b.WriteString(" && printf %s " + gzipBase64(own) + " | base64 -d | gzip -dc > " + shellQuote(f))
		}
	}
	b.WriteString("\nexit 0\n")
	return b.String()
}

// collected is what the collect command brought back.
type collected struct {
	files map[string][]byte // report and epilogue files, by name under .goalbox/
	sums  map[string]string // path -> sha256 hex, for the files that were there
}

// parseTrailer splits a grade command's stdout into the test command's own output and the trailer, and reads the
// trailer. ok is false when there is no complete trailer at the end (the command was killed, or the output cut);
// suspect is set when the trailer's markers appear more than once or anything follows the end line: lines that only
// solution code can have printed.
func parseTrailer(stdout string) (testOut string, c collected, ok bool, suspect string, err error) {
	c = collected{files: map[string][]byte{}, sums: map[string]string{}}
	if n := strings.Count(stdout, trailerBegin); n > 1 {
		suspect = fmt.Sprintf("the output carries the grader's trailer marker %d times: solution code printed it", n)
	}
	i := strings.LastIndex(stdout, "\n"+trailerBegin+"\n")
	if i < 0 {
		return stdout, c, false, suspect, nil
	}
	testOut, trailer := stdout[:i], stdout[i+len(trailerBegin)+2:]
	endAt := strings.LastIndex(trailer, trailerEnd+" ")
	if endAt < 0 {
		return testOut, c, false, suspect, nil
	}
	if rest := strings.TrimSpace(trailer[endAt:]); strings.Contains(rest, "\n") && suspect == "" {
		suspect = "output follows the grader's trailer: a process the solution started printed after the test run"
	}
	for _, line := range strings.Split(trailer[:endAt], "\n") {
		if rest, isFile := strings.CutPrefix(line, "file "); isFile {
			name, enc, _ := strings.Cut(rest, " ")
			data, derr := gunzipBase64(enc)
			if derr != nil {
				err = errors.Join(err, fmt.Errorf("reading %s from the trailer: %v", name, derr))
				continue
			}
			c.files[name] = data
			continue
		}
		if sum, name, found := strings.Cut(line, "  "); found && len(sum) == 64 {
			c.sums[name] = sum
		}
	}
	return testOut, c, true, suspect, err
}

func gzipBase64(data []byte) string {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(data) // a bytes.Buffer does not fail
	w.Close()
	return base64.StdEncoding.EncodeToString(z.Bytes())
}

func gunzipBase64(enc string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// changedFiles lists the files of want whose checksum after the run differs from their content before it (or
// that are gone).
func changedFiles(want map[string][]byte, sums map[string]string) []string {
	var changed []string
	for _, f := range sortedKeys(want) {
		h := sha256.Sum256(want[f])
		if sums[f] != hex.EncodeToString(h[:]) {
			changed = append(changed, f)
		}
	}
	return changed
}
