package controlplane

import (
	"bytes"
	"context"
	"debug/buildinfo"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeName is the node kwok plays.
const NodeName = "kwok-node-0"

//go:embed stages/helm-test.yaml
var helmTestStage []byte

// kwokStages are kwok's own stages, read from the kwok module at the version
// .bin/kwok was built from: a node becomes Ready and renews its lease; a
// scheduled pod becomes Running and Ready, a Job's pod then Succeeded, and a
// deleted pod goes.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

func (c *Cluster) startKwok(ctx context.Context) error {
	stages, err := c.writeStages()
	if err != nil {
		return err
	}
	port := strconv.Itoa(freePort())
	err = c.run("kwok", "--kubeconfig="+c.Kubeconfig, "--config="+stages, "--manage-all-nodes=true",
		"--node-ip=127.0.0.1", "--node-port="+port, "--server-address=127.0.0.1:"+port,
		"--node-lease-duration-seconds=40")
	if err != nil {
		return err
	}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, fakeNode(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	return c.poll(ctx, "kwok's node to be ready", func() (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// writeStages writes kwok's stages and the helm test one into one file.
func (c *Cluster) writeStages() (string, error) {
	dir, err := ModuleDir(filepath.Join(c.BinDir, "kwok"), "sigs.k8s.io/kwok")
	if err != nil {
		return "", err
	}
	var all bytes.Buffer
	for _, s := range kwokStages {
		b, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			return "", err
		}
		all.Write(b)
		all.WriteString("\n---\n")
	}
	all.Write(helmTestStage)
	path := filepath.Join(c.dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, all.Bytes(), 0o600)
}

// ModuleDir is the folder of module path in the module cache, at the
// version the binary bin was built from (`go mod download` fetches it
// through the module proxy the first time).
func ModuleDir(bin, path string) (string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", err
	}
	version := ""
	if info.Main.Path == path {
		version = info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == path {
			version = d.Version
		}
	}
	if version == "" || version == "(devel)" {
		return "", fmt.Errorf("%s was not built from a version of %s", bin, path)
	}
	return DownloadModule(path + "@" + version)
}

// DownloadModule is the folder of a module version (path@version) in the
// module cache, fetched through the module proxy if it is not there.
func DownloadModule(pathVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", pathVersion)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", pathVersion, err, m.Error)
	}
	return m.Dir, nil
}

func fakeNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
				"kubernetes.io/hostname": NodeName, "type": "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}
