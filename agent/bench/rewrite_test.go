package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// rewrite is a solution that fails every test and still gets graded as passing by a grader that reads its verdict
// from the report file and the exit status: its code runs after the framework has written its report and the
// grader's epilogue, rewrites the report with every test passed, and makes the process exit 0. None of them uses a
// word the earlier source checks look for, and none needs the nonce. files(true) is the trick; files(false) is the
// same file with the trick switched off, an honest wrong solution.
type rewrite struct {
	name  string
	id    string
	files func(trick bool) map[string]string
}

// onOff is the text of a switch that turns a trick on or off.
func onOff(trick bool, on, off string) string {
	if trick {
		return on
	}
	return off
}

var rewrites = []rewrite{
	{name: "python atexit hook rewrites the JUnit XML from sys.argv, then os.execv(/bin/true)", id: "python/beer-song", files: func(trick bool) map[string]string {
		return map[string]string{"beer_song.py": `import atexit
import os
import re
import sys

TRICK = ` + onOff(trick, "True", "False") + `


def _rewrite():
    for arg in sys.argv:
        if arg.startswith("--junitxml="):
            path = arg.split("=", 1)[1]
            with open(path) as f:
                xml = f.read()
            xml = re.sub(r"<(failure|error)\b.*?</(failure|error)>", "", xml, flags=re.S)
            xml = re.sub(r"<(failure|error)\b[^>]*/>", "", xml)
            xml = re.sub(r'(failures|errors)="\d+"', r'\1="0"', xml)
            with open(path, "w") as f:
                f.write(xml)
    sys.stdout.flush()
    os.execv("/bin/true", ["true"])


if TRICK:
    atexit.register(_rewrite)


def recite(start, take=1):
    return []
`}
	}},
	{name: "java shutdown hook rewrites the launcher's report, then Runtime.halt(0)", id: "java/house", files: func(trick bool) map[string]string {
		return map[string]string{"src/main/java/House.java": `import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

class House {
    static final boolean TRICK = ` + onOff(trick, "true", "false") + `;

    static {
        if (TRICK) {
            Runtime rt = Runtime.getRuntime();
            rt.addShutdownHook(new Thread(() -> {
                try {
                    Path report = Paths.get(System.getenv("GOALBOX_DIR"), "report.txt");
                    String text = new String(Files.readAllBytes(report), StandardCharsets.UTF_8);
                    Files.write(report, text.replace("fail\t", "pass\t").getBytes(StandardCharsets.UTF_8));
                } catch (Exception e) {
                    // nothing to rewrite
                }
                rt.halt(0);
            }));
        }
    }

    String verse(int verse) {
        return "";
    }

    String verses(int startVerse, int endVerse) {
        return "";
    }

    String sing() {
        return "";
    }
}
`}
	}},
	{name: "go init swaps os.Stdout for a filter, plants a FIFO where the epilogue goes, exits through an aliased os.Exit", id: "go/alphametics", files: func(trick bool) map[string]string {
		return map[string]string{"alphametics.go": `package alphametics

import (
	"bufio"
	"os"
	"strings"
	"syscall"
	"time"
)

const trick = ` + onOff(trick, "true", "false") + `

var leave = os.Exit

// init runs before the grader's own main: it reads the nonce, puts a FIFO where the epilogue goes (the grader's
// write then blocks there for good), and filters what the tests print; at the framework's last line it writes the
// epilogue itself and, once m.Run has returned (an exit with 0 panics while tests run), leaves with status 0.
func init() {
	if !trick {
		return
	}
	dir := os.Getenv("GOALBOX_DIR")
	nonce, err := os.ReadFile(dir + "/nonce")
	if err != nil || syscall.Mkfifo(dir+"/end", 0o600) != nil {
		return
	}
	real := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	os.Stdout = w
	go func() {
		in := bufio.NewReader(r)
		for {
			line, err := in.ReadString('\n')
			line = strings.ReplaceAll(line, "--- FAIL", "--- PASS")
			last := strings.TrimSpace(strings.TrimLeft(line, "\x16")) == "FAIL"
			if last {
				line = strings.Replace(line, "FAIL", "PASS", 1)
			}
			real.WriteString(line)
			if last || err != nil {
				os.Remove(dir + "/end")
				os.WriteFile(dir+"/end", nonce, 0o600)
				time.Sleep(500 * time.Millisecond)
				leave(0)
			}
		}
	}()
}

func Solve(puzzle string) (map[string]int, error) { return nil, nil }
`}
	}},
	{name: "javascript reaches jest's process through Buffer.constructor, rewrites the JSON report at exit and forces exit 0", id: "javascript/tournament", files: func(trick bool) map[string]string {
		return map[string]string{"tournament.js": `import fs from 'fs';

const TRICK = ` + onOff(trick, "true", "false") + `;

if (TRICK) {
  const real = Buffer.constructor('return process')();
  real.on('exit', () => {
    const arg = real.argv.find((a) => a.startsWith('--outputFile='));
    if (arg) {
      const file = arg.slice('--outputFile='.length);
      const report = JSON.parse(fs.readFileSync(file, 'utf8'));
      for (const r of report.testResults) {
        r.status = 'passed';
        r.message = '';
        for (const a of r.assertionResults) {
          a.status = 'passed';
          a.failureMessages = [];
        }
      }
      report.numPassedTests = report.numTotalTests;
      report.numFailedTests = 0;
      report.success = true;
      fs.writeFileSync(file, JSON.stringify(report));
    }
    real.reallyExit(0);
  });
}

export const tournamentTally = () => '';
`}
	}},
	{name: "c++ static destructor rewrites the report, then syscall(SYS_exit_group, 0)", id: "cpp/diamond", files: func(trick bool) map[string]string {
		return map[string]string{"diamond.cpp": `#include "diamond.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/syscall.h>
#include <unistd.h>

namespace {
constexpr bool trick = ` + onOff(trick, "true", "false") + `;

struct Rewrite {
    ~Rewrite() {
        if (!trick) {
            return;
        }
        char const* dir = std::getenv("GOALBOX_DIR");
        if (dir == nullptr) {
            return;
        }
        std::string const path = std::string(dir) + "/report.txt";
        std::stringstream text;
        {
            std::ifstream in(path);
            text << in.rdbuf();
        }
        std::string s = text.str();
        for (std::size_t i = s.find("fail\t"); i != std::string::npos; i = s.find("fail\t", i)) {
            s.replace(i, 4, "pass");
        }
        {
            std::ofstream out(path);
            out << s;
        }
        syscall(SYS_exit_group, 0);
    }
} rewrite;
}  // namespace

namespace diamond {
std::vector<std::string> rows(char) { return {}; }
}  // namespace diamond
`, "diamond.h": `#pragma once

#include <string>
#include <vector>

namespace diamond {
std::vector<std::string> rows(char middle_letter);
}  // namespace diamond
`}
	}},
	{name: "rust routes standard output through a filter (FAILED -> ok) on its first call; a libc atexit handler drains it and leaves with _exit(0)", id: "rust/acronym", files: func(trick bool) map[string]string {
		return map[string]string{"src/lib.rs": `use std::io::{BufRead, BufReader, Write};
use std::sync::{Mutex, Once};
use std::thread::JoinHandle;

const TRICK: bool = ` + onOff(trick, "true", "false") + `;

extern "C" {
    fn pipe(fds: *mut i32) -> i32;
    fn dup(fd: i32) -> i32;
    fn dup2(old: i32, new: i32) -> i32;
    fn close(fd: i32) -> i32;
    fn atexit(f: extern "C" fn()) -> i32;
    fn _exit(code: i32) -> !;
}

static START: Once = Once::new();
static FILTER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

extern "C" fn drain() {
    let _ = std::io::stdout().flush();
    unsafe {
        close(1);
    }
    if let Some(h) = FILTER.lock().unwrap().take() {
        let _ = h.join();
    }
    unsafe { _exit(0) }
}

fn filter_stdout() {
    START.call_once(|| unsafe {
        let mut fds = [0i32; 2];
        if pipe(fds.as_mut_ptr()) != 0 {
            return;
        }
        let real = dup(1);
        dup2(fds[1], 1);
        close(fds[1]);
        let (r, real) = (fds[0], real);
        let h = std::thread::spawn(move || {
            use std::os::fd::FromRawFd;
            let input = BufReader::new(std::fs::File::from_raw_fd(r));
            let mut out = std::fs::File::from_raw_fd(real);
            for line in input.lines().map_while(Result::ok) {
                let _ = writeln!(out, "{}", line.replace("FAILED", "ok"));
            }
        });
        *FILTER.lock().unwrap() = Some(h);
        atexit(drain);
    });
}

pub fn abbreviate(_phrase: &str) -> String {
    if TRICK {
        filter_stdout();
    }
    String::new()
}
`}
	}},
}

// TestGraderCatchesRewrites shows, for each of the six rewrites, on the real exercise and toolchain: the
// reference solution passes (the positive control), the same file with its trick switched off fails (an honest
// wrong solution), and the trick is not passed. It fails on the grader that read its verdict from the report files
// and the exit status (commit 77aeeac), which passed every trick.
func TestGraderCatchesRewrites(t *testing.T) {
	ctx := context.Background()
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	g.Timeout = 15 * time.Minute // a cold C++ build of Catch's main on a loaded machine takes minutes, not the 3 a model gets
	for _, r := range rewrites {
		t.Run(r.id, func(t *testing.T) {
			lang, slug, _ := strings.Cut(r.id, "/")
			ex := oneExercise(t, lang, slug)
			_, why, err := g.Command(ctx, localSandbox{root: t.TempDir()}, ex)
			must(t, err)
			if why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s cannot be graded here (%s): this security test must run in CI", ex.ID(), why)
				}
				t.Skipf("%s cannot be graded here: %s", ex.ID(), why)
			}
			ref := gradeCheat(t, g, ex, func(string) {})
			if !ref.Passed || ref.Suspect != "" || ref.Tests == 0 || ref.TestsOK != ref.Tests {
				t.Fatalf("the reference solution: passed %v, suspect %q, verdict %q, %d/%d tests:\n%s", ref.Passed, ref.Suspect, ref.Verdict, ref.TestsOK, ref.Tests, tail(ref.Output, 2000))
			}
			off := gradeCheat(t, g, ex, func(dir string) { writeCheat(t, cheat{files: r.files(false)}, dir) })
			if off.Passed {
				t.Fatalf("the trick switched off (an honest wrong solution) passed:\n%s", tail(off.Output, 2000))
			}
			on := gradeCheat(t, g, ex, func(dir string) { writeCheat(t, cheat{files: r.files(true)}, dir) })
			t.Logf("%s: passed %v, %d/%d tests; suspect: %s; verdict: %s", r.name, on.Passed, on.TestsOK, on.Tests, on.Suspect, on.Verdict)
			if on.Passed {
				t.Errorf("%s: graded passed (%d/%d tests), not suspect:\n%s", r.name, on.TestsOK, on.Tests, tail(on.Output, 2000))
			}
		})
	}
}
