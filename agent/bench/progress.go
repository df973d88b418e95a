package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress prints one line per finished exercise: how far the run is, how many passed, what it cost so far and
// when it should end. On a terminal the line is rewritten in place; elsewhere (a log file, CI) each update is a
// line of its own. A nil *Progress prints nothing.
type Progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time

	mu         sync.Mutex
	done       int // finished, resumed ones included
	fresh      int // finished in this process: the ETA is based on these alone
	passed     int
	graded     int
	ungradable int
	suspect    int // graded exercises with a suspect try
	errors     int
	running    int
	cost       float64
	last       string
}

// NewProgress reports on total exercises to w; tty says w is a terminal.
func NewProgress(w io.Writer, total int, tty bool) *Progress {
	return &Progress{w: w, tty: tty, total: total, start: time.Now()}
}

// add counts a finished exercise; resumed ones count toward the totals but not toward the rate of work.
func (p *Progress) add(r ExerciseResult, resumed bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !resumed {
		p.fresh++
		p.running--
	}
	cost, _, _, _, _ := r.totals()
	p.cost += cost
	switch {
	case r.Ungradable != "":
		p.ungradable++
	case resultError(r) != "":
		p.errors++
		p.graded++
	default:
		p.graded++
	}
	if r.PassedOnTry() > 0 {
		p.passed++
	}
	if suspectTry(r) != "" {
		p.suspect++
	}
	if resumed {
		p.last = "resumed " + r.ID
	} else {
		p.last = r.ID + " " + verdict(r)
	}
	p.print()
}

// verdict is how one exercise ended, in a few words.
func verdict(r ExerciseResult) string {
	switch {
	case r.Ungradable != "":
		return "ungradable"
	case resultError(r) != "":
		return "ERROR"
	case r.PassedOnTry() > 0:
		return fmt.Sprintf("pass (try %d)", r.PassedOnTry())
	case suspectTry(r) != "":
		return "SUSPECT"
	}
	return "fail"
}

// suspectTry is the reason of the first try the grader found suspect, or "".
func suspectTry(r ExerciseResult) string {
	for _, t := range r.Tries {
		if t.Suspect != "" {
			return t.Suspect
		}
	}
	return ""
}

func (p *Progress) line() string {
	rate := 0.0
	if p.graded > 0 {
		rate = 100 * float64(p.passed) / float64(p.graded)
	}
	s := fmt.Sprintf("bench %d/%d  passed %d/%d (%.1f%%)", p.done, p.total, p.passed, p.graded, rate)
	if p.ungradable > 0 {
		s += fmt.Sprintf("  ungradable %d", p.ungradable)
	}
	if p.suspect > 0 {
		s += fmt.Sprintf("  SUSPECT %d", p.suspect)
	}
	if p.errors > 0 {
		s += fmt.Sprintf("  ERRORS %d", p.errors)
	}
	if p.running > 0 {
		s += fmt.Sprintf("  running %d", p.running)
	}
	elapsed := time.Since(p.start)
	s += fmt.Sprintf("  $%.4f  elapsed %s", p.cost, elapsed.Round(time.Second))
	if left := p.total - p.done; left > 0 && p.fresh > 0 {
		eta := time.Duration(float64(elapsed) / float64(p.fresh) * float64(left))
		s += "  ETA " + eta.Round(time.Second).String()
	}
	if p.last != "" {
		s += "  last: " + p.last
	}
	return s
}

func (p *Progress) print() {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", p.line())
		return
	}
	fmt.Fprintln(p.w, p.line())
}

// started counts an exercise under way.
func (p *Progress) started() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	if p.tty {
		p.print()
	}
}

// tick redraws the line every interval on a terminal, so elapsed time moves while exercises take minutes. The
// returned function stops it; calling it again does nothing.
func (p *Progress) tick(interval time.Duration) (stop func()) {
	if p == nil || !p.tty {
		return func() {}
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.mu.Lock()
				p.print()
				p.mu.Unlock()
			}
		}
	}()
	return stop
}

// finish ends the line on a terminal.
func (p *Progress) finish() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done > 0 {
		fmt.Fprintln(p.w)
	}
}
