// Package lifecycle installs the doclib chart into a real control plane
// (package controlplane: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok) with the helm commands of the platform guide, and
// takes it through its life: install of every ci/*-values.yaml with --wait
// into a namespace that enforces PodSecurity "restricted", a server-side
// strict dry-run, helm test, an unchanged upgrade that must roll no pod, an
// upgrade that rolls only the service whose value changed, a rollback and an
// uninstall that leaves only what the chart says it keeps.
//
// kwok plays the node: pods are scheduled, admitted and marked ready, but no
// container runs, so this says nothing of the services' own readiness (the
// e2e suite shows that).
package lifecycle
