package loop

import "testing"

// TestCountTests reads each runner's own summary, and says unknown where there is none.
func TestCountTests(t *testing.T) {
	for _, c := range []struct {
		name string
		exit int
		out  string
		want TestCount
	}{
		{"passed", 0, "anything", TestCount{Known: true}},
		{"go", 1, "--- FAIL: TestA (0.00s)\n    x_test.go:3: no\n--- FAIL: TestB (0.00s)\n    --- FAIL: TestB/sub (0.00s)\nFAIL\nFAIL\texample.com/x\t0.01s\n", TestCount{Known: true, Failed: 2}},
		{"go build failed", 1, "# example.com/x\n./x.go:3:1: syntax error\nFAIL\texample.com/x [build failed]\n", TestCount{Known: true, Broken: true}},
		{"pytest", 1, "....F.F\n=========== 2 failed, 5 passed in 0.12s ===========\n", TestCount{Known: true, Failed: 2}},
		{"pytest errors", 1, "===== 1 failed, 3 passed, 2 errors in 0.50s =====\n", TestCount{Known: true, Failed: 3}},
		{"pytest -q", 1, "F..\n1 failed, 2 passed in 0.03s\n", TestCount{Known: true, Failed: 1}},
		{"jest", 1, "Tests:       3 failed, 4 passed, 7 total\nTime: 1s\n", TestCount{Known: true, Failed: 3}},
		{"cargo", 101, "test result: FAILED. 3 passed; 2 failed; 0 ignored\ntest result: ok. 1 passed; 0 failed;\n", TestCount{Known: true, Failed: 2}},
		{"cargo build", 101, "error[E0425]: cannot find value `x`\nerror: could not compile `x` due to previous error\n", TestCount{Known: true, Broken: true}},
		{"unknown", 1, "FAIL: add 2 3 is not 5\n", TestCount{}},
	} {
		if got := countTests(c.exit, c.out); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	two, three, broken := TestCount{Known: true, Failed: 2}, TestCount{Known: true, Failed: 3}, TestCount{Known: true, Broken: true}
	if !three.Worse(two) || two.Worse(three) || !broken.Worse(three) || three.Worse(broken) || (TestCount{}).Worse(two) || two.Worse(TestCount{}) {
		t.Error("worse: more failures and a broken build are worse; unknown is never compared")
	}
}
