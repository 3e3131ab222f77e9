module github.com/doclib/api

go 1.26.0

require (
	github.com/swaggo/files/v2 v2.0.2
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2
