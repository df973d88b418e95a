
// Appended by the goalbox grader for one grade; the test file is put back as it was before the next one.
//
// libtest has no hook after its run, so the epilogue is the last test of this binary: the grader runs the tests on
// one thread, in name order, so it runs only after every other test has finished. It writes the end line with the
// grade's nonce for this binary to the grade's collector, where libtest logs each test's result (--logfile); a
// process that ends before it leaves no end line.
#[test]
fn zzzz_goalbox_epilogue() {
    use std::io::Write;
    let dir = std::env::var("GOALBOX_DIR").unwrap_or_default();
    if let Ok(nonce) = std::fs::read_to_string(format!("{dir}/nonce")) {
        if let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open("/dev/fd/3") {
            let _ = pipe.write_all(format!("end {} {}\n", nonce, env!("CARGO_CRATE_NAME")).as_bytes());
        }
    }
}
