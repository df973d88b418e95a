package fsserver

// A line diff for sandbox_diff. An edit knows which lines it changed (diff.go); two states of a file do not, so the
// changed regions are found here with Myers' O(ND) algorithm over the lines (after the common head and tail are
// set aside), and then rendered by the edit's diffWriter, which makes the hunks, their context and the byte cap.
// Myers keeps one row of its search per step, so a pair of files with more than maxDiffSteps differing lines
// would cost quadratic memory: past that the middle is shown as one region (correct, only not minimal).

import "bytes"

// maxDiffSteps bounds Myers' search: its memory is about maxDiffSteps² ints (2 MB at 500).
const maxDiffSteps = 500

// lineRegion is a changed region: old lines [a0, a1) became new lines [b0, b1).
type lineRegion struct{ a0, a1, b0, b1 int }

// lineStarts returns the offset where each line of data starts, and len(data) last.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		starts = append(starts, i)
	}
	if starts[len(starts)-1] != len(data) {
		starts = append(starts, len(data))
	}
	return starts
}

// lineIDs numbers the lines of both texts so that equal lines get equal numbers.
func lineIDs(a, b []byte, sa, sb []int) ([]int, []int) {
	ids := map[string]int{}
	number := func(data []byte, starts []int) []int {
		out := make([]int, len(starts)-1)
		for i := range out {
			line := data[starts[i]:starts[i+1]]
			id, ok := ids[string(line)]
			if !ok {
				id = len(ids)
				ids[string(line)] = id
			}
			out[i] = id
		}
		return out
	}
	return number(a, sa), number(b, sb)
}

// diffLines returns the changed regions between the lines x and y, in order.
func diffLines(x, y []int) []lineRegion {
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	a, b := x[head:len(x)-tail], y[head:len(y)-tail]
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	regs, ok := myers(a, b)
	if !ok {
		regs = []lineRegion{{0, len(a), 0, len(b)}}
	}
	for i := range regs {
		regs[i].a0 += head
		regs[i].a1 += head
		regs[i].b0 += head
		regs[i].b1 += head
	}
	return regs
}

// myers finds a shortest edit script from a to b and returns it as regions, or false past maxDiffSteps.
func myers(a, b []int) ([]lineRegion, bool) {
	n, m := len(a), len(b)
	limit := min(n+m, maxDiffSteps)
	v := make([]int, 2*limit+3) // v[k+off] is the furthest x on diagonal k
	off := limit + 1
	var trace [][]int // the row before each step, from diagonal -d-1 to d+1
	found := -1
	for d := 0; d <= limit && found < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return nil, false
	}
	// Walk back from (n, m): each step is one deleted old line (a move right) or one inserted new line (a move
	// down); the snakes between them are equal lines.
	delA, insB := make([]bool, n), make([]bool, m)
	x, y := n, m
	for d := found; d > 0; d-- {
		row := trace[d]
		at := func(k int) int { return row[k+d+1] }
		k := x - y
		pk := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		}
		px := at(pk)
		py := px - pk
		if pk == k+1 {
			insB[py] = true
		} else {
			delA[px] = true
		}
		x, y = px, py
	}
	// Old lines not deleted match new lines not inserted, in order: the regions are the runs between them.
	var regs []lineRegion
	for i, j := 0, 0; i < n || j < m; {
		if (i < n && delA[i]) || (j < m && insB[j]) {
			r := lineRegion{a0: i, b0: j}
			for i < n && delA[i] {
				i++
			}
			for j < m && insB[j] {
				j++
			}
			r.a1, r.b1 = i, j
			regs = append(regs, r)
			continue
		}
		i, j = i+1, j+1
	}
	return regs, true
}
