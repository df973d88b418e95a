package fsserver

// The manifest's file format: a JSON header line (id, label, time, skipped paths), then one line per entry, its
// fields separated by tabs: kind, mode (octal), size, hash, the stat key (stat fields, see checkpoint_stat_*.go),
// symlink target and path. A path or target that holds a tab, a line break, a backslash, a quote or anything
// unprintable is written Go-quoted (and starts with a quote). encoding/json took 22 ms for a manifest of 10,000
// files, as long as the rest of a checkpoint of an unchanged tree; this takes a few.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// manifestHeader is the first line of a manifest file.
type manifestHeader struct {
	ID           string    `json:"id"`
	Label        string    `json:"label"`
	Created      fixedTime `json:"created"`
	Skipped      []string  `json:"skipped,omitempty"`
	SkippedCount int       `json:"skipped_count,omitempty"`
	Entries      int       `json:"entries"`
}

// fixedTime writes a time with all nine fraction digits: time.Time's own JSON drops trailing zeros, so a
// manifest's size (which the store counts and lists) would depend on the nanosecond it was taken at.
type fixedTime time.Time

const fixedTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func (t fixedTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(fixedTimeLayout) + `"`), nil
}

func (t *fixedTime) UnmarshalJSON(b []byte) error { return (*time.Time)(t).UnmarshalJSON(b) }

func encodeManifest(m *manifest) ([]byte, error) {
	head, err := json.Marshal(manifestHeader{ID: m.ID, Label: m.Label, Created: fixedTime(m.Created), Skipped: m.Skipped,
		SkippedCount: m.SkippedCount, Entries: len(m.Entries)})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(head)+1+len(m.Entries)*150)
	b = append(append(b, head...), '\n')
	for _, e := range m.Entries {
		b = append(b, e.Kind...)
		b = append(b, '\t')
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, '\t')
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, '\t')
		b = append(b, e.Hash...)
		b = append(b, '\t')
		b = appendStat(b, e.Stat)
		b = append(b, '\t')
		b = appendName(b, e.Target)
		b = append(b, '\t')
		b = appendName(b, e.Path)
		b = append(b, '\n')
	}
	return b, nil
}

func appendName(b []byte, s string) []byte {
	if strings.ContainsFunc(s, func(r rune) bool { return r == '\t' || r == '\\' || r == '"' || !unicode.IsPrint(r) }) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func parseName(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	return s, nil
}

func decodeManifest(data []byte) (*manifest, error) {
	head, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, errors.New("no header line")
	}
	var h manifestHeader
	if err := json.Unmarshal(head, &h); err != nil {
		return nil, err
	}
	m := &manifest{ID: h.ID, Label: h.Label, Created: time.Time(h.Created), Skipped: h.Skipped, SkippedCount: h.SkippedCount,
		Entries: make([]mEntry, 0, h.Entries)}
	for len(rest) > 0 {
		line, more, _ := bytes.Cut(rest, []byte{'\n'})
		rest = more
		f := strings.Split(string(line), "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("entry %d: %d fields", len(m.Entries)+1, len(f))
		}
		mode, err1 := strconv.ParseUint(f[1], 8, 32)
		size, err2 := strconv.ParseInt(f[2], 10, 64)
		st, err3 := parseStat(f[4])
		target, err4 := parseName(f[5])
		p, err5 := parseName(f[6])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(m.Entries)+1, err)
		}
		m.Entries = append(m.Entries, mEntry{Kind: f[0], Mode: uint32(mode), Size: size, Hash: f[3], Stat: st, Target: target, Path: p})
	}
	if len(m.Entries) != h.Entries {
		return nil, fmt.Errorf("%d entries, the header says %d: the file is cut", len(m.Entries), h.Entries)
	}
	return m, nil
}
