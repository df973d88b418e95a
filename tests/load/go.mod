module github.com/goalbox/goalbox/tests/load

go 1.26.8
