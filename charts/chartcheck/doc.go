// Package chartcheck renders the doclib Helm chart in-process over the
// values files of charts/doclib/ci, decodes every manifest strictly with the
// Kubernetes client-go scheme (unknown or duplicate fields, wrong types and
// unknown kinds fail) and checks the chart's policies: probes, restricted
// security contexts, resources, two Ingress hosts, PDBs, NetworkPolicies
// and the refusal to render without back-office credentials.
//
// It is its own module, outside go.work, so that Helm and client-go never
// enter the services' dependency graphs:
//
//	cd charts/chartcheck && GOWORK=off go test ./...
package chartcheck
