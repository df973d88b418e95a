module github.com/goalbox/goalbox/pkg

go 1.26.8
