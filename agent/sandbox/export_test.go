package sandbox

// PlainInMemory is plainInMemory for the tests of package sandbox_test (the benchmark's go-sdk client).
var PlainInMemory = plainInMemory
