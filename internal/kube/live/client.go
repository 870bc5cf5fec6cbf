// Package live plans, applies and reads cluster servers through the
// Kubernetes API (docs/kubernetes.md): plan is a server-side-apply dry run
// diffed against the live objects plus a GPU preflight no dry run makes;
// apply is server-side apply, a wait for the rollout, the gates through a
// Service, then the Service switch (blue/green). The cluster is the record:
// objects are found by roofline's labels, and no state file holds them.
package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The resources roofline writes.
var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	lwsGVR      = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
)

func gvrOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "Deployment":
		return deployments
	case "LeaderWorkerSet":
		return lwsGVR
	}
	return services
}

// Client talks to one cluster namespace.
type Client struct {
	Typed     kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
	// Cluster is the cluster block's name, for messages.
	Cluster string
}

// NewClient builds a client from a REST config.
func NewClient(rc *rest.Config, cluster, namespace string) (*Client, error) {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 50, 100 // plan reads a few lists per server
	typed, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Client{Typed: typed, Dynamic: dyn, Namespace: namespace, Cluster: cluster}, nil
}

// RESTConfig reads the cluster block's kubeconfig and context: the file it
// names, else $KUBECONFIG, else ~/.kube/config, as kubectl does.
func RESTConfig(c *config.Cluster) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if p := c.Kubeconfig; p != "" {
		if strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, err
			}
			p = filepath.Join(home, p[2:])
		}
		rules.ExplicitPath = p
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: reading the kubeconfig: %w (set kubeconfig and context in the cluster block, or KUBECONFIG)", c.Name, err)
	}
	return rc, nil
}

// lwsInstalled reports whether the LeaderWorkerSet CRD is served.
func (c *Client) lwsInstalled(ctx context.Context) (bool, error) {
	_, err := c.Typed.Discovery().ServerResourcesForGroupVersion(lwsGVR.GroupVersion().String())
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// managedSelector selects everything roofline made, or one server's.
func managedSelector(server string) string {
	sel := kube.LabelManagedBy + "=" + kube.ManagedBy
	if server != "" {
		sel += "," + kube.LabelServer + "=" + server
	}
	return sel
}
