//go:build unix

package mcptest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// Outsider is another user of this machine than the servers' — made for the test with useradd, as the servers run
// as root in the tests — who tries to get into the servers it can reach: loopback is shared by every user, so the
// token and its file are what keeps such a user out. A user made here is never one that exists already (uid 1000
// may be a person's).
type Outsider struct {
	Name     string
	UID, GID int
	bin      string
}

// outsiderProbeEnv carries the probe's instructions to the test binary run as the outsider.
const outsiderProbeEnv = "GOALBOX_OUTSIDER_PROBE"

// NewOutsider makes a system user with no home and no shell for the test, removed at its end, and a copy of the
// test binary that user may run (the go tool's build folder is root's alone). It skips the test unless run as root
// with useradd at hand.
func NewOutsider(t testing.TB) *Outsider {
	t.Helper()
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "making another user needs root")
	}
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		ciskip.Skip(t, "no useradd to make another user with")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gbxout" + hex.EncodeToString(b)
	if out, err := exec.Command(useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
		"--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	o := &Outsider{Name: name}
	o.UID, _ = strconv.Atoi(u.Uid)
	o.GID, _ = strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "outsider-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.bin = filepath.Join(dir, "probe")
	if err := copyFile(self, o.bin); err != nil {
		t.Fatal(err)
	}
	return o
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ProbeSpec is what the outsider tries.
type ProbeSpec struct {
	// TokenFiles are files it tries to read (a server's token file, its folder).
	TokenFiles []string
	// URLs are MCP endpoints it sends an initialize to: with no token, a wrong one, and RightToken.
	URLs []string
	// RightToken is the positive control: with it the outsider gets in, so a refusal is the token's doing, not the
	// network's or the user's.
	RightToken map[string]string // by URL
}

// Answer is an HTTP status and the start of the body.
type Answer struct {
	Status int
	Body   string
	Err    string
}

// ProbeReport is what the outsider got.
type ProbeReport struct {
	UID        int
	TokenFiles map[string]string // file → the error reading it ("" when it could)
	NoToken    map[string]Answer // by URL
	WrongToken map[string]Answer
	RightToken map[string]Answer
}

// Probe runs, as the outsider, the test named testName of the current test binary, which must call OutsiderProbe
// first; it returns what the outsider got.
func (o *Outsider) Probe(t testing.TB, testName string, spec ProbeSpec) ProbeReport {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(o.bin, "-test.run=^"+testName+"$", "-test.count=1", "-test.v")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", outsiderProbeEnv + "=" + string(b)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID), Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	var rep ProbeReport
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "OUTSIDER-REPORT "); ok {
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Fatalf("the outsider's report: %v", err)
			}
			if rep.UID != o.UID {
				t.Fatalf("the probe ran as uid %d, not as the outsider %d", rep.UID, o.UID)
			}
			return rep
		}
	}
	t.Fatalf("the outsider's probe reported nothing (%v):\n%s", err, out)
	return rep
}

// OutsiderProbe is the outsider's side of Probe: a test that calls it first does the probe and ends when run by
// Probe, and is skipped otherwise.
func OutsiderProbe(t *testing.T) {
	raw := os.Getenv(outsiderProbeEnv)
	if raw == "" {
		t.Skip("the outsider's side of a probe: run by Outsider.Probe")
	}
	var spec ProbeSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	rep := ProbeReport{UID: os.Getuid(), TokenFiles: map[string]string{}, NoToken: map[string]Answer{}, WrongToken: map[string]Answer{}, RightToken: map[string]Answer{}}
	for _, f := range spec.TokenFiles {
		rep.TokenFiles[f] = ""
		if _, err := os.ReadFile(f); err != nil {
			rep.TokenFiles[f] = err.Error()
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	try := func(url, auth string) Answer {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			return Answer{Err: err.Error()}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Answer{Status: resp.StatusCode, Body: string(body)}
	}
	for _, url := range spec.URLs {
		rep.NoToken[url] = try(url, "")
		rep.WrongToken[url] = try(url, "Bearer not-the-token-"+hex.EncodeToString([]byte(url))[:8])
		if tok := spec.RightToken[url]; tok != "" {
			rep.RightToken[url] = try(url, "Bearer "+tok)
		}
	}
	b, _ := json.Marshal(rep)
	os.Stdout.WriteString("OUTSIDER-REPORT " + string(b) + "\n")
}

// CheckRefused fails t unless rep shows the outsider refused by every URL with a 401 that says what is wrong, kept
// out of every token file, and let in by each URL given its right token.
func CheckRefused(t testing.TB, rep ProbeReport, spec ProbeSpec) {
	t.Helper()
	for f, err := range rep.TokenFiles {
		if err == "" {
			t.Errorf("the outsider (uid %d) read the token file %s", rep.UID, f)
		} else if !strings.Contains(err, "permission denied") {
			t.Errorf("the outsider's read of %s failed, but not as refused: %s", f, err)
		}
	}
	for _, url := range spec.URLs {
		for what, a := range map[string]Answer{"no token": rep.NoToken[url], "a wrong token": rep.WrongToken[url]} {
			if a.Status != http.StatusUnauthorized || !strings.Contains(a.Body, "Send the header Authorization") {
				t.Errorf("the outsider with %s at %s: %d %s %s; want 401 naming the header", what, url, a.Status, a.Body, a.Err)
			}
		}
		if spec.RightToken[url] != "" {
			if a := rep.RightToken[url]; a.Status != http.StatusOK {
				t.Errorf("positive control: the outsider with the right token at %s: %d %s %s; want 200", url, a.Status, a.Body, a.Err)
			}
		}
	}
}
