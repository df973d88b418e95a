package bench

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// After the test command has ended, the collect command, a second command of the grader's own, reads back what
// the harness asked for: the report and epilogue files (gzip, base64: one line each, whatever they hold) and the
// checksums of the files the run must not change; then it removes .goalbox/. Nothing of the test process's
// output is in its output, so no line a solution printed can pass for one of these.

// collectCommand is the collect step for h, run from the exercise folder.
func collectCommand(h harness) string {
	var b strings.Builder
	b.WriteString("for f in")
	for _, f := range h.reports {
		b.WriteString(" " + shellQuote(f))
	}
	b.WriteString(`; do if [ -f "` + harnessDir + `/$f" ]; then printf 'file %s ' "$f"; gzip -c "` + harnessDir + `/$f" | base64 -w0; echo; fi; done; `)
	if len(h.checked) > 0 {
		b.WriteString("sha256sum --")
		for _, f := range sortedFileKeys(h.checked) {
			b.WriteString(" " + shellQuote(f))
		}
		b.WriteString(" 2>/dev/null; ")
	}
	// The grader's files go, and the exercise's own come back, so the next try finds the exercise as it was.
	b.WriteString("rm -rf " + harnessDir)
	for _, f := range sortedFileKeys(h.files) {
		if strings.HasPrefix(f, harnessDir+"/") {
			continue
		}
		if own, ok := h.pristine[f]; ok {
			// Removed first: Restore wrote it as this process's user, which the commands' user may not write.
			b.WriteString(" && rm -f " + shellQuote(f) + " && printf %s " + base64.StdEncoding.EncodeToString(own) + " | base64 -d > " + shellQuote(f))
		} else {
			b.WriteString(" && rm -f " + shellQuote(f))
		}
	}
	return b.String()
}

// collected is what the collect command brought back.
type collected struct {
	files map[string][]byte // report and epilogue files, by name under .goalbox/
	sums  map[string]string // path -> sha256 hex, for the files that were there
}

// parseCollected reads the collect command's output.
func parseCollected(out string) (collected, error) {
	c := collected{files: map[string][]byte{}, sums: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "file "); ok {
			name, enc, _ := strings.Cut(rest, " ")
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
			if err != nil {
				return c, fmt.Errorf("collecting %s: %v", name, err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return c, fmt.Errorf("collecting %s: %v", name, err)
			}
			data, err := io.ReadAll(zr)
			if err != nil {
				return c, fmt.Errorf("collecting %s: %v", name, err)
			}
			c.files[name] = data
			continue
		}
		if sum, name, ok := strings.Cut(line, "  "); ok && len(sum) == 64 {
			c.sums[name] = sum
		}
	}
	return c, nil
}

// changedFiles lists the files of want whose checksum after the run differs from their content before it (or
// that are gone).
func changedFiles(want map[string][]byte, sums map[string]string) []string {
	var changed []string
	for _, f := range sortedFileKeys(want) {
		h := sha256.Sum256(want[f])
		if sums[f] != hex.EncodeToString(h[:]) {
			changed = append(changed, f)
		}
	}
	return changed
}
