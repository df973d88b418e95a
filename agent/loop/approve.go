package loop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Approver decides whether a command may run. A false answer with a reason goes back to the model; an error
// (the context ended while waiting) ends the run.
type Approver interface {
	Approve(ctx context.Context, command string) (ok bool, reason string, err error)
}

// TerminalApprover asks a person: it prints the command to Out and reads one line from In. "y" or "yes" runs it;
// anything else refuses, and words other than "n"/"no" are passed on to the model as the reason. End of input
// refuses every later command.
type TerminalApprover struct {
	out   io.Writer
	lines chan string
	once  sync.Once
	in    io.Reader
}

// NewTerminalApprover reads answers from in and asks on out.
func NewTerminalApprover(in io.Reader, out io.Writer) *TerminalApprover {
	return &TerminalApprover{in: in, out: out, lines: make(chan string)}
}

// Approve asks about one command and waits for an answer or the end of ctx.
func (a *TerminalApprover) Approve(ctx context.Context, command string) (bool, string, error) {
	return a.ask(ctx, fmt.Sprintf("\nThe agent wants to run:\n    %s\nRun it? [y/N, or a reason to refuse] ", strings.ReplaceAll(command, "\n", "\n    ")),
		"no one is there to approve commands (input closed)")
}

// ApprovePlan asks about the model's plan (-plan with -approve), which the progress lines have just shown; the
// answers are read as a command's are.
func (a *TerminalApprover) ApprovePlan(ctx context.Context, plan string) (bool, string, error) {
	return a.ask(ctx, "\nGo ahead with this plan? [y/N, or what to change] ", "")
}

// ask prints the question and reads one answer line. closed is the reason given when input has ended.
func (a *TerminalApprover) ask(ctx context.Context, question, closed string) (bool, string, error) {
	// One reader goroutine for the approver's life: a read cannot be interrupted, so a question abandoned by a
	// timeout must not leave a second reader racing the first.
	a.once.Do(func() {
		go func() {
			sc := bufio.NewScanner(a.in)
			for sc.Scan() {
				a.lines <- sc.Text()
			}
			close(a.lines)
		}()
	})
	fmt.Fprint(a.out, question)
	select {
	case <-ctx.Done():
		return false, "", ctx.Err()
	case line, ok := <-a.lines:
		if !ok {
			fmt.Fprintln(a.out, "(no input: refused)")
			return false, closed, nil
		}
		ans := strings.TrimSpace(line)
		switch strings.ToLower(ans) {
		case "y", "yes":
			return true, "", nil
		case "", "n", "no":
			return false, "", nil
		}
		return false, ans, nil
	}
}
