// Package apicheck checks the API reference (../openapi.yaml) with standard
// OpenAPI tools, in `make test`: the document against the OpenAPI 3.1
// schema, every example against the schema it illustrates, and the contract
// against the published one (../baseline/openapi.yaml) for changes that
// would break an installed app. It is a module of its own, outside go.work,
// so that the checkers' dependencies (kin-openapi, oasdiff, libopenapi)
// never change the versions the services build with.
package apicheck
