// Package libs holds nothing itself; its sub-packages are what the document
// library's services really share: configuration, logging, telemetry and
// metrics, HTTP conventions, MongoDB and event plumbing, and the kit that
// starts real backing servers for tests and `make dev`; and cmd/probe, the
// healthcheck binary every image carries.
package libs
