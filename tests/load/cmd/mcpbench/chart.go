package main

import (
	"cmp"
	"fmt"
	"html"
	"strings"
)

// chart is an SVG bar chart of calls/s per server, workload and transport: one bar per figure, the value at its end.
func chart(figs []figure) string {
	const (
		left, barH, gap, width, top = 330, 22, 10, 900, 40
	)
	maxRate := 1.0
	for _, f := range figs {
		maxRate = max(maxRate, f.CallsPerS)
	}
	height := top + len(figs)*(barH+gap) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="13">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">calls/s per server and transport (longer is better)</text>`+"\n")
	colors := map[string]string{"goalbox": "#2b7bb9", "official (Node)": "#e08a1e", "kernel alone": "#8a8a8a", "pipe floor": "#b0b0b0"}
	scale := float64(width-left-110) / maxRate
	for i, f := range figs {
		y := top + i*(barH+gap)
		label := fmt.Sprintf("%s — %s, %s, %d caller", f.Server, f.Workload, f.Transport, f.Callers)
		if f.Callers != 1 {
			label += "s"
		}
		color := colors[f.Server]
		color = cmp.Or(color, "#5a9")
		w := max(1, int(f.CallsPerS*scale))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-6, html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, w, barH, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%.0f</text>`+"\n", left+w+6, y+barH-6, f.CallsPerS)
	}
	fmt.Fprintf(&b, `<text x="10" y="%d" font-size="11" fill="#555">Each figure with its load average, p50/p99 and server CPU per call: docs/BENCHMARKS.md</text>`+"\n", height-10)
	b.WriteString("</svg>\n")
	return b.String()
}
