
// Appended by the goalbox grader for one grade; the test file is put back as it was before the next one.
//
// libtest has no hook after its run, so the epilogue is the last test of this binary: the grader runs the tests on
// one thread, in name order, so it runs only after every other test has finished. It writes the grade's nonce back
// for this binary; a process that ends before it leaves no epilogue.
#[test]
fn zzzz_goalbox_epilogue() {
    let dir = std::env::var("GOALBOX_DIR").unwrap_or_default();
    if let Ok(nonce) = std::fs::read(format!("{dir}/nonce")) {
        std::fs::write(format!("{dir}/end.{}", env!("CARGO_CRATE_NAME")), nonce).unwrap();
    }
}
