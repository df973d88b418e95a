package load

// Every file the load test writes is one whole "version": a header naming the file's path, the writer's id for
// this version and its size, a payload generated from those, a state line the edits toggle, and a checksum.
// Given a file's bytes, parseVersion regenerates the version they name and compares byte for byte, so a torn,
// interleaved, truncated or misplaced write cannot pass.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"testing"
)

const versionMagic = "goalbox-load v1"

// version names one whole content of a file.
type version struct {
	path  string // workspace-relative path the version was written to
	id    string // writer and sequence number, e.g. c07-312
	size  int    // payload bytes, a multiple of 64
	state byte   // 'A' as written, toggled to 'B' and back by edits
}

// key identifies a version among those written to one path.
func (v version) key() string { return v.id + "/" + string(v.state) }

// stateLine is the line an edit replaces.
func stateLine(s byte) string { return "state: " + string(s) + "\n" }

func otherState(s byte) byte {
	if s == 'A' {
		return 'B'
	}
	return 'A'
}

// content is the version's bytes: header, payload lines of 63 lower-case letters, then the state line and the
// SHA-256 of everything above the state line.
func (v version) content() []byte {
	var b bytes.Buffer
	b.Grow(v.size + 200)
	fmt.Fprintf(&b, "%s\npath: %s\nid: %s\nsize: %d\n", versionMagic, v.path, v.id, v.size)
	h := fnv.New64a()
	h.Write([]byte(v.path + "\x00" + v.id))
	rng := rand.NewPCG(h.Sum64(), uint64(v.size))
	var line [64]byte
	line[63] = '\n'
	for n := 0; n < v.size; n += 64 {
		for i := 0; i < 63; {
			x := rng.Uint64()
			for j := 0; j < 12 && i < 63; j++ {
				line[i] = 'a' + byte(x%26)
				x /= 26
				i++
			}
		}
		b.Write(line[:])
	}
	sum := sha256.Sum256(b.Bytes())
	fmt.Fprintf(&b, "%s", stateLine(v.state))
	fmt.Fprintf(&b, "sum: %x\n", sum)
	return b.Bytes()
}

// parseVersion says which whole version data is, or why it is none.
func parseVersion(data []byte) (version, error) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) < 7 || string(lines[0]) != versionMagic {
		return version{}, fmt.Errorf("not a version (%d bytes, starts %q)", len(data), clip(string(data), 60))
	}
	field := func(i int, name string) (string, error) {
		l := string(lines[i])
		if len(l) < len(name)+2 || l[:len(name)+2] != name+": " {
			return "", fmt.Errorf("line %d is %q, want %s: ...", i+1, clip(l, 60), name)
		}
		return l[len(name)+2:], nil
	}
	var v version
	var err error
	if v.path, err = field(1, "path"); err != nil {
		return v, err
	}
	if v.id, err = field(2, "id"); err != nil {
		return v, err
	}
	size, err := field(3, "size")
	if err != nil {
		return v, err
	}
	if v.size, err = strconv.Atoi(size); err != nil || v.size < 0 || v.size%64 != 0 || v.size > 1<<24 {
		return v, fmt.Errorf("bad size %q", size)
	}
	// The state line is the second-last line (the content ends with "sum: ...\n", so the last element is empty).
	st, err := field(len(lines)-3, "state")
	if err != nil {
		return v, err
	}
	if st != "A" && st != "B" {
		return v, fmt.Errorf("bad state %q", st)
	}
	v.state = st[0]
	if want := v.content(); !bytes.Equal(data, want) {
		return v, fmt.Errorf("torn: %d bytes do not equal version %s of %s (%d bytes)", len(data), v.key(), v.path, len(want))
	}
	return v, nil
}

func TestVersionRoundTrip(t *testing.T) {
	for _, size := range []int{0, 64, 1024, 16384} {
		v := version{path: "load/c01/f2.txt", id: "c01-7", size: size, state: 'A'}
		data := v.content()
		got, err := parseVersion(data)
		if err != nil || got != v {
			t.Fatalf("size %d: parseVersion = %+v, %v; want %+v", size, got, err, v)
		}
		edited := bytes.Replace(data, []byte(stateLine('A')), []byte(stateLine('B')), 1)
		if bytes.Count(data, []byte(stateLine('A'))) != 1 {
			t.Fatalf("size %d: the state line is not unique", size)
		}
		v.state = 'B'
		if got, err := parseVersion(edited); err != nil || got != v {
			t.Fatalf("size %d: edited: parseVersion = %+v, %v; want %+v", size, got, err, v)
		}
		if size == 0 {
			continue
		}
		// A torn write: the head of one version and the tail of another.
		other := version{path: v.path, id: "c02-9", size: size, state: 'A'}.content()
		torn := append(append([]byte{}, data[:len(data)/2]...), other[len(other)/2:]...)
		if _, err := parseVersion(torn); err == nil {
			t.Fatalf("size %d: a torn file passed", size)
		}
		if _, err := parseVersion(data[:len(data)-10]); err == nil {
			t.Fatalf("size %d: a truncated file passed", size)
		}
		moved := version{path: "load/c01/f3.txt", id: v.id, size: size, state: 'A'}.content()
		if got, err := parseVersion(moved); err != nil || got.path == v.path {
			t.Fatalf("size %d: a version of another path reads as %+v, %v", size, got, err)
		}
	}
}

func TestFindReply(t *testing.T) {
	var out struct {
		N int `json:"n"`
	}
	sse := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n" + "data: \"result\":{\"n\":5}}\n\n"
	env, err := findReply("text/event-stream", []byte(sse), "7", &out)
	if err != nil || env.Error != nil || out.N != 5 {
		t.Fatalf("SSE: %+v %v n=%d", env, err, out.N)
	}
	out.N = 0
	env, err = findReply("application/json; charset=utf-8", []byte(`{"jsonrpc":"2.0","id":8,"result":{"n":6}}`), "8", &out)
	if err != nil || env.Error != nil || out.N != 6 {
		t.Fatalf("JSON: %+v %v n=%d", env, err, out.N)
	}
	env, err = findReply("application/json", []byte(`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"bad"}}`), "9", &out)
	if err != nil || env.Error == nil || env.Error.Code != -32602 {
		t.Fatalf("JSON error: %+v %v", env, err)
	}
	if _, err := findReply("text/event-stream", []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), "2", &out); err == nil {
		t.Fatal("a stream without the reply passed")
	}
	if _, err := findReply("text/html", []byte("<html>"), "1", &out); err == nil {
		t.Fatal("an HTML reply passed")
	}
}
