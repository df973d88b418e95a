package childinit

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Proc is a started init, waiting for its Config on Ctl.
type Proc struct {
	Cmd *exec.Cmd
	// Ctl is the init's fd 3: Send the Config, then Terminate; closing it makes the init kill everything and exit.
	Ctl *os.File
	// Reports is the init's fd 4 (Reports, Collect).
	Reports *os.File
	// The command's stdin, stdout and stderr.
	Stdin, Stdout, Stderr *os.File
}

// Start starts an init from the running binary (whatever its name: /proc/self/exe with argv[0] Arg0) with the
// environment env in the folder dir. It waits for its Config.
func Start(env []string, dir string) (*Proc, error) {
	var files []*os.File // every pipe end, closed on failure
	var ends [5][2]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		ends[i], files = [2]*os.File{r, w}, append(files, r, w)
	}
	ctl, rep, in, out, errOut := ends[0], ends[1], ends[2], ends[3], ends[4]
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{Arg0},
		Env:        env,
		Dir:        dir,
		Stdin:      in[0],
		Stdout:     out[1],
		Stderr:     errOut[1],
		ExtraFiles: []*os.File{ctl[0], rep[1]}, // fds 3 and 4
		// No parent-death signal: if the server dies, the init must live on long enough to kill its descendants,
		// which it does when its control pipe reports EOF.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err := cmd.Start()
	for _, f := range []*os.File{ctl[0], rep[1], in[0], out[1], errOut[1]} {
		f.Close()
	}
	if err != nil {
		for _, f := range []*os.File{ctl[1], rep[0], in[1], out[0], errOut[0]} {
			f.Close()
		}
		return nil, fmt.Errorf("start the sandbox: %w", err)
	}
	return &Proc{Cmd: cmd, Ctl: ctl[1], Reports: rep[0], Stdin: in[1], Stdout: out[0], Stderr: errOut[0]}, nil
}

// Discard ends an init that never got a command: EOF on its control pipe makes it exit.
func (p *Proc) Discard() {
	p.Ctl.Close()
	_ = p.Cmd.Wait()
	p.ClosePipes()
}

// ClosePipes closes the server's ends of the pipes but the control pipe's.
func (p *Proc) ClosePipes() {
	for _, f := range []*os.File{p.Reports, p.Stdin, p.Stdout, p.Stderr} {
		f.Close()
	}
}
