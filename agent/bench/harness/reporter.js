// Written by the goalbox grader for one grade and removed after it; not part of the exercise.
//
// A jest reporter runs in jest's own process, and jest builds it before it loads any test file, so before the
// solution runs. It takes the grade's nonce from the grade's private folder ($GOALBOX_DIR) and removes the file;
// only when jest reports the end of the run (onRunComplete, every test file done) does it write the nonce back as
// the epilogue.
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

class GoalboxReporter {
  onRunComplete() {
    if (nonce !== null) {
      fs.writeFileSync(path.join(dir, 'end'), nonce);
    }
  }
}

module.exports = GoalboxReporter;
