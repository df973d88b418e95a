module github.com/goalbox/goalbox

go 1.26.8
