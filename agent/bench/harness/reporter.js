// Written by the goalbox grader for one grade and removed after it; not part of the exercise.
//
// A jest reporter runs in jest's own process, and jest builds it before it loads any test file, so before the
// solution runs. It takes the grade's nonce from the grade's private folder ($GOALBOX_DIR) and removes the file.
// Each test's result goes to the grade's collector through descriptor 3 as jest reports it; only when jest reports
// the end of the run (onRunComplete, every test file done) does it write the end line with the nonce, and it closes
// the descriptor, before any exit handler of the solution's can run.
'use strict';
const fs = require('fs');
const path = require('path');

const dir = process.env.GOALBOX_DIR || '';
let nonce = null;
try {
  nonce = fs.readFileSync(path.join(dir, 'nonce'), 'utf8');
  fs.unlinkSync(path.join(dir, 'nonce'));
} catch (e) {
  nonce = null;
}

function emit(line) {
  try {
    fs.writeSync(3, line.replace(/\n/g, ' ') + '\n');
  } catch (e) {
    // no collector: the plain test command
  }
}

function status(s) {
  return s === 'passed' ? 'pass' : s === 'failed' ? 'fail' : 'skip';
}

class GoalboxReporter {
  onTestCaseResult(test, result) {
    emit(status(result.status) + '\t' + result.title);
  }

  onTestResult(test, result) {
    // A file that did not run, and tests jest did not run (skipped, todo), get no case result of their own.
    if (result.testExecError || (result.failureMessage && result.testResults.length === 0)) {
      emit('fail\ttest file ' + test.path);
    }
    for (const a of result.testResults) {
      if (a.status !== 'passed' && a.status !== 'failed') {
        emit('skip\t' + a.title);
      }
    }
  }

  onRunComplete() {
    if (nonce !== null) {
      emit('end\t' + nonce);
    }
    try {
      fs.closeSync(3);
    } catch (e) {
      // already closed, or never there
    }
  }
}

module.exports = GoalboxReporter;
