module github.com/doclib/services/media

go 1.26.0

require github.com/doclib/libs v0.0.0

replace github.com/doclib/libs => ../../libs
