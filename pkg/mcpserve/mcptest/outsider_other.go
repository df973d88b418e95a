//go:build !unix

package mcptest

import "testing"

// Outsider is another user of the machine; making one needs useradd, so on other systems the tests that use it
// are skipped.
type Outsider struct{}

// NewOutsider skips the test: making another user is done only on Unix.
func NewOutsider(t testing.TB) *Outsider {
	t.Skip("making another user needs useradd (Unix)")
	return nil
}

// ProbeSpec is what the outsider tries (see the Unix version).
type ProbeSpec struct {
	TokenFiles []string
	URLs       []string
	RightToken map[string]string
}

// ProbeReport is what the outsider got (see the Unix version).
type ProbeReport struct {
	UID     int
	NoToken map[string]Answer
}

// Answer is an HTTP status and the start of the body.
type Answer struct {
	Status int
	Body   string
	Err    string
}

// Probe is never reached: NewOutsider skipped the test.
func (o *Outsider) Probe(t testing.TB, testName string, spec ProbeSpec) ProbeReport {
	return ProbeReport{}
}

// OutsiderProbe skips: there is no outsider to run it.
func OutsiderProbe(t *testing.T) { t.Skip("the outsider's side of a probe: Unix only") }

// CheckRefused is never reached: NewOutsider skipped the test.
func CheckRefused(t testing.TB, rep ProbeReport, spec ProbeSpec) {}
