package childinit

import (
	"encoding/json"
	"io"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
)

// Arg0 marks a re-executed child init.
const Arg0 = "goalbox-exec-init"

// Terminate, written to a running init's fd 3, asks it to send SIGTERM to every process of the command.
const Terminate = 't'

// KillGrace is how long an init gets to kill its descendants after it was told to, before it is killed itself. It
// normally takes milliseconds; on a loaded machine dying processes take longer to let go of their children.
const KillGrace = 10 * time.Second

// Config is what the server tells a child init, as one JSON line on fd 3: the command and everything the init
// applies before it starts it (the backend's policy for this mode).
type Config struct {
	Command string `json:"command"`
	// Dir is the absolute host path of the working folder; Env the command's whole environment.
	Dir string   `json:"dir"`
	Env []string `json:"env"`
	// Rlimits are set on the init (lowered only, never raised), and so on everything it starts.
	Rlimits []confine.Rlimit `json:"rlimits"`
	// Seccomp selects the filter; the init fills in its own pid and the server's.
	Seccomp seccomp.Policy `json:"seccomp"`
	// Rules are enforced when Landlock is LandlockEnforced; otherwise Landlock is reported as it is.
	Rules    landlock.Rules         `json:"rules"`
	Landlock protocol.LandlockState `json:"landlock"`
	// UID and GID are who the command runs as, when the init is root.
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Report is one JSON line a child init writes on fd 4.
type Report struct {
	// Setup is sent once sh is running: what confinement is in force.
	Setup *confine.Applied `json:"setup,omitempty"`
	// Error means sh could not be started.
	Error string `json:"error,omitempty"`
	// Exited is sent when sh ended: its exit status, or the signal that killed it.
	Exited bool `json:"exited,omitempty"`
	Status int  `json:"status,omitempty"`
	Signal int  `json:"signal,omitempty"`
}

// Send gives a waiting init its command (w: the init's fd 3).
func Send(w io.Writer, cfg Config) error {
	line, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// Reports decodes an init's reports (r: its fd 4) as they come; the channel closes at EOF.
func Reports(r io.Reader) <-chan Report {
	reports := make(chan Report, 4)
	go func() {
		defer close(reports)
		dec := json.NewDecoder(r)
		for {
			var rep Report
			if dec.Decode(&rep) != nil {
				return
			}
			reports <- rep
		}
	}()
	return reports
}

// Collect reads an init's reports to the end: how sh ended (nil if the init never said), or why it could not
// start; what confinement the init applied goes to applied, when asked for.
func Collect(reports <-chan Report, applied **confine.Applied) (exited *Report, setupErr string) {
	for r := range reports {
		switch {
		case r.Setup != nil:
			if applied != nil {
				*applied = r.Setup
			}
		case r.Error != "":
			setupErr = r.Error
		case r.Exited:
			exited = &r
		}
	}
	return exited, setupErr
}
