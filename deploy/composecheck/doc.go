// Package composecheck loads compose.yaml with compose-go (the loader
// Docker Compose itself uses) and checks what the team relies on without a
// Docker engine: the expected services, a healthcheck on every container,
// every image pinned (by version or digest, the Dockerfiles' base images
// too), start order on health, the services' hardening, and each service's
// environment against the configuration reference (docs/platform.md) (every required variable
// set, no name it does not document).
//
// It is its own module, outside go.work, so that compose-go never enters the
// services' dependency graphs:
//
//	cd deploy/composecheck && GOWORK=off go test ./...
package composecheck
